package containerconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// User namespace ranges, upstream's defaults: each pod with hostUsers false
// gets 65536 IDs (its own 0 to 65535), at a multiple of 65536 on the host,
// never the first range, which holds the host's root.
const (
	userNamespaceLength = 65536
	// userNamespaceSlots is how many ranges the host's 32-bit IDs hold
	// after the first.
	userNamespaceSlots = 1<<32/userNamespaceLength - 1
)

// userNamespaceFile is the file of a pod's directory that records its
// mappings, upstream's name and format, so that a restarted agent (or
// kubelet) gives the pod the same IDs.
const userNamespaceFile = "userns"

// idMapping and userNamespaceMappings are the JSON of userNamespaceFile.
type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type userNamespaceMappings struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

// userNamespaces allocates the host ID ranges of pods' user namespaces.
type userNamespaces struct {
	mu     sync.Mutex
	loaded bool
	// slot → pod, and pod → its first host ID.
	used  map[uint32]types.UID
	byPod map[types.UID]uint32
}

// userNamespace is the pod's user namespace, as upstream asks the runtime
// for it: the node's (mode NODE) unless the pod says hostUsers: false; then
// one of its own (mode POD) whose IDs 0 to 65535 map to a range of the
// host's kept for the pod alone, the same range for its sandbox and every
// container and across restarts (recorded in PodsDir/<uid>/userns). A
// runtime handler that does not support user namespaces
// (Options.UserNamespaces) gets no such pod: the error has upstream's
// message, and the pod waits in ContainerCreating with a
// FailedCreatePodSandBox event, as upstream's does.
func (b *Builder) userNamespace(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	// A runtime class that cannot be found is that error, as upstream's.
	handler, err := b.RuntimeHandler(pod)
	if err != nil {
		return nil, err
	}
	if b.opts.UserNamespaces == nil || !b.opts.UserNamespaces(handler) {
		if handler != "" {
			return nil, fmt.Errorf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
		}
		return nil, errors.New("can't set `spec.hostUsers: false`, runtime does not support user namespaces")
	}
	first, err := b.userns.getOrAllocate(b.opts.PodsDir, pod.UID)
	if err != nil {
		return nil, fmt.Errorf("create user namespace: %w", err)
	}
	m := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: first, ContainerId: 0, Length: userNamespaceLength}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m(), Gids: m()}, nil
}

// getOrAllocate returns the first host ID of the pod's range: the one
// recorded, else a free one (from a random slot on, as upstream picks),
// recorded before it is returned. podsDir "" keeps the records in memory.
func (u *userNamespaces) getOrAllocate(podsDir string, uid types.UID) (uint32, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.load(podsDir); err != nil {
		return 0, err
	}
	if first, ok := u.byPod[uid]; ok {
		return first, nil
	}
	start := rand.Uint32N(userNamespaceSlots)
	for i := uint32(0); i < userNamespaceSlots; i++ {
		slot := (start + i) % userNamespaceSlots
		if _, taken := u.used[slot]; taken {
			continue
		}
		first := (slot + 1) * userNamespaceLength
		if err := writeUserNamespace(podsDir, uid, first); err != nil {
			return 0, err
		}
		u.used[slot], u.byPod[uid] = uid, first
		return first, nil
	}
	return 0, errors.New("could not find an empty slot to allocate a user namespace")
}

// release frees the pod's range and removes its record.
func (u *userNamespaces) release(podsDir string, uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	first, ok := u.byPod[uid]
	if !ok {
		return
	}
	delete(u.byPod, uid)
	delete(u.used, first/userNamespaceLength-1)
	if podsDir != "" && validPodUID(uid) {
		_ = os.Remove(filepath.Join(podsDir, string(uid), userNamespaceFile))
	}
}

// load reads, once, the ranges recorded in the pods' directories. A record
// that does not hold what this package writes is an error: the IDs it
// names may be in use.
func (u *userNamespaces) load(podsDir string) error {
	if u.loaded {
		return nil
	}
	used, byPod := map[uint32]types.UID{}, map[types.UID]uint32{}
	if podsDir != "" {
		entries, err := os.ReadDir(podsDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("user namespace: read pods from disk: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			uid := types.UID(e.Name())
			b, err := os.ReadFile(filepath.Join(podsDir, e.Name(), userNamespaceFile))
			if errors.Is(err, fs.ErrNotExist) || (err == nil && len(b) == 0) {
				continue
			}
			if err != nil {
				return fmt.Errorf("user namespace of pod %s: %w", uid, err)
			}
			first, err := parseUserNamespace(b)
			if err != nil {
				return fmt.Errorf("user namespace of pod %s: %w", uid, err)
			}
			slot := first/userNamespaceLength - 1
			if other, taken := used[slot]; taken {
				return fmt.Errorf("user namespace of pod %s: range picked for pod %q already taken", uid, other)
			}
			used[slot], byPod[uid] = uid, first
		}
	}
	u.used, u.byPod, u.loaded = used, byPod, true
	return nil
}

// parseUserNamespace checks a record and returns its first host ID.
func parseUserNamespace(b []byte) (uint32, error) {
	var m userNamespaceMappings
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(m.UIDMappings) != 1:
		return 0, errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(m.GIDMappings) != 1 || m.UIDMappings[0] != m.GIDMappings[0]:
		return 0, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case m.UIDMappings[0].ContainerID != 0:
		return 0, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	first, length := m.UIDMappings[0].HostID, m.UIDMappings[0].Length
	if length != userNamespaceLength {
		return 0, fmt.Errorf("wrong user namespace length %d", length)
	}
	if first%userNamespaceLength != 0 || first == 0 {
		return 0, fmt.Errorf("wrong user namespace offset specified %d", first)
	}
	return first, nil
}

// writeUserNamespace records the pod's range in its directory, durably:
// written to a temporary file, synced, renamed, and the directory synced.
func writeUserNamespace(podsDir string, uid types.UID, first uint32) error {
	if podsDir == "" {
		return nil
	}
	if !validPodUID(uid) {
		return fmt.Errorf("pod UID %q is not a plain path element", uid)
	}
	one := []idMapping{{HostID: first, ContainerID: 0, Length: userNamespaceLength}}
	b, err := json.Marshal(userNamespaceMappings{UIDMappings: one, GIDMappings: one})
	if err != nil {
		return err
	}
	dir := filepath.Join(podsDir, string(uid))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+userNamespaceFile+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, userNamespaceFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// validPodUID tells whether a pod UID can name a directory of its own.
func validPodUID(uid types.UID) bool {
	return uid != "" && filepath.IsLocal(string(uid)) && filepath.Base(string(uid)) == string(uid)
}
