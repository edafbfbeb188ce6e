package devices

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

// checkpointVersion is the version of the checkpoint's format.
const checkpointVersion = 1

// checkpoint is what survives a restart: which devices each container
// holds, with the plugin's answer so that a restarted container gets the
// same config without asking the plugin again, and which resources were
// registered.
type checkpoint struct {
	Version     int                    `json:"version"`
	Allocations []checkpointAllocation `json:"allocations,omitempty"`
	// Registered lists each registered resource's devices.
	Registered map[string][]string `json:"registered,omitempty"`
}

type checkpointAllocation struct {
	PodUID    types.UID `json:"podUID"`
	Container string    `json:"container"`
	Resource  string    `json:"resource"`
	DeviceIDs []string  `json:"deviceIDs"`
	// NUMANodes are the NUMA nodes of each device that had some when the
	// container got it (upstream keeps its device IDs by NUMA node).
	NUMANodes map[string][]int `json:"numaNodes,omitempty"`
	// Response is the plugin's ContainerAllocateResponse, protobuf-encoded.
	Response []byte `json:"response,omitempty"`
}

func (m *Manager) checkpointPath() string { return filepath.Join(m.o.Dir, CheckpointName) }

// restore reads the checkpoint (mu held). The allocations are taken as
// they were; each registered resource is kept with no devices, its plugin
// counted as gone from now, so that it leaves the node after the grace
// period unless its plugin registers again, as upstream restores it.
func (m *Manager) restore() {
	b, err := os.ReadFile(m.checkpointPath())
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		m.log.Warn("Cannot read the device checkpoint: starting with no allocations", "path", m.checkpointPath(), "err", err)
		return
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil || cp.Version != checkpointVersion {
		if err == nil {
			err = fmt.Errorf("version %d, want %d", cp.Version, checkpointVersion)
		}
		m.log.Warn("The device checkpoint is unreadable: starting with no allocations", "path", m.checkpointPath(), "err", err)
		return
	}
	for _, a := range cp.Allocations {
		resp := &pluginapi.ContainerAllocateResponse{}
		if err := proto.Unmarshal(a.Response, resp); err != nil {
			m.log.Warn("A device allocation in the checkpoint is unreadable: dropped", "pod", a.PodUID, "container", a.Container, "resource", a.Resource, "err", err)
			continue
		}
		ids := slices.Clone(a.DeviceIDs)
		slices.Sort(ids)
		m.pods.set(a.PodUID, a.Container, a.Resource, &allocation{ids: ids, numa: a.NUMANodes, resp: resp})
	}
	now := m.clock.Now()
	for name := range cp.Registered {
		m.resources[name] = &resourceState{stoppedAt: now, listed: true, health: map[string]bool{}}
	}
	m.log.Info("Device checkpoint restored", "allocations", len(cp.Allocations), "resources", len(cp.Registered))
}

// checkpointLocked writes the checkpoint (mu held), atomically, readable by
// the owner only; a failure is logged, as the allocations stay in memory.
func (m *Manager) checkpointLocked() {
	if !m.loaded {
		return // never overwrite a checkpoint not yet read
	}
	cp := checkpoint{Version: checkpointVersion, Registered: map[string][]string{}}
	for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
		for _, c := range slices.Sorted(maps.Keys(m.pods[uid])) {
			for _, res := range slices.Sorted(maps.Keys(m.pods[uid][c])) {
				a := m.pods[uid][c][res]
				b, err := proto.Marshal(a.resp)
				if err != nil {
					m.log.Warn("Cannot encode a device allocation", "pod", uid, "container", c, "resource", res, "err", err)
					continue
				}
				cp.Allocations = append(cp.Allocations, checkpointAllocation{PodUID: uid, Container: c, Resource: res, DeviceIDs: a.ids, NUMANodes: a.numa, Response: b})
			}
		}
	}
	for name, r := range m.resources {
		cp.Registered[name] = slices.Sorted(maps.Keys(r.health))
	}
	if err := atomicfile.WriteJSON(m.checkpointPath(), cp); err != nil {
		m.log.Warn("Cannot write the device checkpoint", "path", m.checkpointPath(), "err", err)
	}
}
