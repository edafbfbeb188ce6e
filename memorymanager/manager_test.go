package memorymanager_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/internal/golden"
	"github.com/kubeletkit/kubeletkit/memorymanager"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	mi = 1 << 20
	gi = 1 << 30
)

// container parses "NAME mem=Q [hugepages-2Mi=Q] [burstable] [sidecar]"
// into a container asking for one CPU, whose limits equal its requests
// unless burstable.
func container(f []string) v1.Container {
	c := v1.Container{Name: f[0], Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}
	burstable := false
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case k == "mem" && ok:
			c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(v)
		case ok:
			c.Resources.Requests[v1.ResourceName(k)] = resource.MustParse(v)
		case kv == "burstable":
			burstable = true
		case kv == "sidecar":
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
	}
	c.Resources.Limits = c.Resources.Requests.DeepCopy()
	if burstable {
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("64")
	}
	return c
}

// pod builds a pod from lines "init NAME ..." and "app NAME ...".
func pod(name string, lines []string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
	for _, l := range lines {
		f := strings.Fields(l)
		c := container(f[1:])
		if f[0] == "init" {
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
	return p
}

func q(b uint64) string { return resource.NewQuantity(int64(b), resource.BinarySI).String() }

// store is a topologymanager.Store a transcript sets.
type store struct {
	mu sync.Mutex
	m  map[string]topologymanager.Hint
}

func (s *store) Affinity(uid types.UID, c string) topologymanager.Hint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[string(uid)+"/"+c]
}

// options parses "POLICY NODES MEM [hugepages-SIZE=PAGES...] [reserve=NODE/RES=Q...]
// [kube/RES=Q...]": a machine of NODES identical NUMA nodes of MEM bytes.
// Unless kube/ is given, kubeReserved is the sum of the reservations.
func options(f []string) (memorymanager.Options, error) {
	opts := memorymanager.Options{Policy: f[0], Logger: quiet}
	n, _ := strconv.Atoi(f[1])
	mem := resource.MustParse(f[2])
	var hp []memorymanager.HugePages
	kube, kubeGiven := v1.ResourceList{}, false
	for _, kv := range f[3:] {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "hugepages-"):
			size := resource.MustParse(strings.TrimPrefix(k, "hugepages-"))
			pages, _ := strconv.ParseUint(v, 10, 64)
			hp = append(hp, memorymanager.HugePages{PageSize: uint64(size.Value()), Pages: pages})
		case k == "reserve":
			node, rest, _ := strings.Cut(v, "/")
			res, qty, _ := strings.Cut(rest, "=")
			id, _ := strconv.Atoi(node)
			i := slices.IndexFunc(opts.ReservedMemory, func(r kubeletconfig.MemoryReservation) bool { return int(r.NumaNode) == id })
			if i < 0 {
				opts.ReservedMemory = append(opts.ReservedMemory, kubeletconfig.MemoryReservation{NumaNode: int32(id), Limits: v1.ResourceList{}})
				i = len(opts.ReservedMemory) - 1
			}
			opts.ReservedMemory[i].Limits[v1.ResourceName(res)] = resource.MustParse(qty)
			sum := kube[v1.ResourceName(res)]
			sum.Add(resource.MustParse(qty))
			if !kubeGiven {
				kube[v1.ResourceName(res)] = sum
			}
		case strings.HasPrefix(k, "kube/"):
			if !kubeGiven {
				kube = v1.ResourceList{}
			}
			kubeGiven = true
			kube[v1.ResourceName(strings.TrimPrefix(k, "kube/"))] = resource.MustParse(v)
		}
	}
	opts.KubeReserved = kube
	if n > 0 {
		opts.Machine = memorymanager.FakeMachine(n, uint64(mem.Value()), hp...)
	}
	return opts, nil
}

// harness drives one Manager through a transcript:
//
//	new POLICY NODES MEM [...]   (see options)
//	affinity POD CONTAINER NODES|any [preferred]   (the topology manager's choice)
//	hints POD   (input: its containers; the hints of each and of the pod)
//	admit POD   (input: its containers)
//	start POD CONTAINER   (AddContainer)
//	remove POD
//	stale ACTIVE,PODS
//	restart [POLICY]   (a new Manager on the same checkpoint)
//	damage   (input: a string of the checkpoint and its replacement)
//	state
func harness(t *testing.T) func(golden.Case) []string {
	dir := t.TempDir()
	var m *memorymanager.Manager
	var opts memorymanager.Options
	aff := &store{m: map[string]topologymanager.Hint{}}
	pods := map[string]*v1.Pod{}
	state := func() []string {
		var out []string
		ms := m.MachineState()
		for id := range len(ms) {
			n := ms[id]
			for _, name := range slices.Sorted(func(yield func(v1.ResourceName) bool) {
				for k := range n.MemoryMap {
					if !yield(k) {
						return
					}
				}
			}) {
				mt := n.MemoryMap[name]
				out = append(out, fmt.Sprintf("node%d %s total=%s sys=%s alloc=%s reserved=%s free=%s", id, name, q(mt.TotalMemSize), q(mt.SystemReserved), q(mt.Allocatable), q(mt.Reserved), q(mt.Free)))
			}
			out = append(out, fmt.Sprintf("node%d assignments=%d cells=%s", id, n.NumberOfAssignments, topologymanager.NewMask(n.Cells...)))
		}
		var lines []string
		for uid, cs := range m.Assignments() {
			for name, bs := range cs {
				for _, b := range bs {
					lines = append(lines, fmt.Sprintf("%s/%s %s=%s on %s", uid, name, b.Type, q(b.Size), topologymanager.NewMask(b.NUMAAffinity...)))
				}
			}
		}
		slices.Sort(lines)
		return append(out, lines...)
	}
	fmtHints := func(h map[string][]topologymanager.Hint) string {
		if h == nil {
			return "nil"
		}
		var parts []string
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range h {
				if !yield(k) {
					return
				}
			}
		}) {
			var hs []string
			for _, x := range h[name] {
				hs = append(hs, x.String())
			}
			parts = append(parts, name+": ["+strings.Join(hs, ", ")+"]")
		}
		return "{" + strings.Join(parts, "; ") + "}"
	}
	return func(c golden.Case) []string {
		f := c.Fields()
		switch f[0] {
		case "new":
			os.RemoveAll(filepath.Join(dir, memorymanager.StateFileName))
			opts, _ = options(f[1:])
			opts.StateDir = dir
			opts.Affinity = aff
			var err error
			m, err = memorymanager.New(opts)
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			return state()
		case "affinity":
			h := topologymanager.Hint{Preferred: len(f) > 4 && f[4] == "preferred"}
			if f[3] != "any" {
				for _, s := range strings.Split(f[3], ",") {
					id, _ := strconv.Atoi(s)
					h.NUMANodes |= topologymanager.NewMask(id)
				}
			}
			aff.mu.Lock()
			aff.m[f[1]+"/"+f[2]] = h
			aff.mu.Unlock()
			return []string{"ok"}
		case "hints":
			p := pod(f[1], c.Input)
			var out []string
			for _, ctr := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
				out = append(out, ctr.Name+" "+fmtHints(m.ContainerHints(p, &ctr)))
			}
			return append(out, "pod "+fmtHints(m.PodHints(p)))
		case "admit":
			p := pod(f[1], c.Input)
			ok, reason, msg := m.Admit(p, nil)
			if !ok {
				return append([]string{fmt.Sprintf("refused %s: %s", reason, msg)}, state()...)
			}
			pods[f[1]] = p
			return state()
		case "start":
			p := pods[f[1]]
			for _, ctr := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
				if ctr.Name == f[2] {
					m.AddContainer(p, &ctr)
				}
			}
			return state()
		case "remove":
			m.RemovePod(types.UID(f[1]))
			return state()
		case "stale":
			var active []*v1.Pod
			if len(f) > 1 {
				for _, name := range strings.Split(f[1], ",") {
					active = append(active, pods[name])
				}
			}
			m.RemoveStaleState(active)
			return state()
		case "restart":
			o := opts
			if len(f) > 1 {
				o.Policy = f[1]
			}
			m2, err := memorymanager.New(o)
			if err != nil {
				return []string{"error: " + strings.ReplaceAll(err.Error(), dir, "DIR")}
			}
			m = m2
			return state()
		case "damage":
			p := filepath.Join(dir, memorymanager.StateFileName)
			b, _ := os.ReadFile(p)
			if !strings.Contains(string(b), c.Input[0]) {
				return []string{"not found: " + c.Input[0]}
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), c.Input[0], c.Input[1], 1)), 0o600)
			return []string{"ok"}
		case "state":
			return state()
		}
		return []string{"unknown command " + f[0]}
	}
}

func TestTranscripts(t *testing.T) { golden.Run(t, harness) }
