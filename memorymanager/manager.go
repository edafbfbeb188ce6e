package memorymanager

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// The policies of memoryManagerPolicy (--memory-manager-policy), spelled
// as upstream spells them.
const (
	// PolicyNone pins no memory: containers use every NUMA node's memory,
	// as without a memory manager. Upstream's default.
	PolicyNone = "None"
	// PolicyStatic pins the memory and huge pages of Guaranteed pods'
	// containers to NUMA nodes and keeps account of every node's memory.
	PolicyStatic = "Static"
)

// StateFileName is the checkpoint's file name in Options.StateDir, upstream's.
const StateFileName = "memory_manager_state"

// ErrInvalidOptions is wrapped by New's errors about its options, the
// reserved memory configuration among them.
var ErrInvalidOptions = errors.New("memorymanager: invalid options")

// Options configure a Manager.
type Options struct {
	// Policy is PolicyNone (the default, "") or PolicyStatic.
	Policy string
	// Machine is the NUMA nodes' memory (Discover, or FakeMachine in
	// tests). Required with PolicyStatic.
	Machine *Machine
	// ReservedMemory is KubeletConfiguration's reservedMemory
	// (--reserved-memory): the memory and huge pages kept for the system
	// on each NUMA node. With PolicyStatic, it must reserve some memory,
	// and for memory and every huge page size its sum across nodes must
	// equal the node allocatable reservation: KubeReserved +
	// SystemReserved (+ EvictionHardMemory for memory). Ignored with
	// PolicyNone.
	ReservedMemory []kubeletconfig.MemoryReservation
	// KubeReserved is kubeReserved (--kube-reserved); only its memory and
	// hugepages-<size> count.
	KubeReserved v1.ResourceList
	// SystemReserved is systemReserved (--system-reserved); only its
	// memory and hugepages-<size> count.
	SystemReserved v1.ResourceList
	// EvictionHardMemory is the hard eviction threshold of memory.available
	// (evictionHard) as a quantity of bytes; the caller turns a percentage
	// into bytes of the machine's memory, as upstream does.
	EvictionHardMemory resource.Quantity
	// StateDir is where the checkpoint (StateFileName) lives, the kubelet's
	// root directory. Empty: the state lives in memory only.
	StateDir string
	// Affinity gives the NUMA nodes the topology manager chose for each
	// container (topologymanager.Manager). nil, or no affinity recorded:
	// the smallest set of NUMA nodes that fits, as upstream's default hint.
	Affinity topologymanager.Store
	// Metrics counts the pinning requests (upstream's
	// memory_manager_pinning_requests_total and _errors_total); nil: none.
	Metrics Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Metrics receives the memory manager's counts. MemoryPinning is called
// with the Manager's lock held and must not block.
type Metrics interface {
	// MemoryPinning counts one container of a Guaranteed pod whose memory
	// the Static policy pins, and whether that failed.
	MemoryPinning(failed bool)
}

// Manager is the memory manager: it decides from which NUMA nodes each
// container of a Guaranteed pod takes its memory and huge pages, keeps the
// account per node in a checkpoint, and tells the runtime (cpuset_mems of
// the container config). It is safe for concurrent use.
type Manager struct {
	o        Options
	log      *slog.Logger
	reserved map[int]map[v1.ResourceName]uint64

	mu sync.Mutex
	st state
	// reusable is, for one pod at a time, the memory its regular init
	// containers hold by NUMA mask and resource: the containers after them
	// take it first (they never run together).
	reusable map[types.UID]map[topologymanager.Mask]map[v1.ResourceName]uint64
}

// New builds a Manager and reads its checkpoint. With PolicyStatic it
// checks the reserved memory configuration as upstream does at start (its
// messages, wrapped in ErrInvalidOptions). A checkpoint of another policy,
// or whose machine state does not match the machine, the reservations and
// the assignments, is an error, as upstream refuses to start on it: the
// operator drains the node and removes the file.
func New(opts Options) (*Manager, error) {
	if opts.Policy == "" {
		opts.Policy = PolicyNone
	}
	m := &Manager{o: opts, log: opts.Logger, reusable: map[types.UID]map[topologymanager.Mask]map[v1.ResourceName]uint64{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.st = state{machine: machineState{}, assignments: map[types.UID]map[string][]Block{}}
	switch opts.Policy {
	case PolicyNone:
	case PolicyStatic:
		if opts.Machine == nil {
			return nil, fmt.Errorf("%w: the static policy needs the Machine", ErrInvalidOptions)
		}
		r, err := reservedByNode(opts.Machine, opts.nodeAllocatableReservation(opts.Machine), opts.ReservedMemory)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		m.reserved = r
		m.st.machine = defaultMachineState(opts.Machine, r)
	default:
		return nil, fmt.Errorf("%w: unknown policy: %q", ErrInvalidOptions, opts.Policy)
	}
	if err := m.restore(); err != nil {
		return nil, err
	}
	m.log.Info("Starting memorymanager", "policy", opts.Policy)
	return m, nil
}

// Policy returns the policy's name.
func (m *Manager) Policy() string { return m.o.Policy }

// requested is the memory and huge pages a container asks for, in bytes:
// its requests, or the resources allocated to it when its status has them
// (after an in-place resize, what the kubelet agreed to).
func requested(pod *v1.Pod, c *v1.Container) (map[v1.ResourceName]uint64, error) {
	list := c.Resources.Requests
	statuses := pod.Status.ContainerStatuses
	if podspec.IsSidecar(c) {
		statuses = append(slices.Clip(statuses), pod.Status.InitContainerStatuses...)
	}
	for _, s := range statuses {
		if s.Name == c.Name && s.AllocatedResources != nil {
			list = s.AllocatedResources
			break
		}
	}
	out := map[v1.ResourceName]uint64{}
	for name, q := range list {
		if !isMemoryResource(name) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok {
			return nil, fmt.Errorf("[memorymanager] failed to represent quantity as int64")
		}
		out[name] = uint64(v)
	}
	return out, nil
}

// pinned reports whether the static policy pins the pod's memory: a
// Guaranteed pod without pod-level resources (which upstream's static
// policy does not support).
func (m *Manager) pinned(pod *v1.Pod) bool {
	return m.o.Policy == PolicyStatic && podspec.QOSClass(pod) == v1.PodQOSGuaranteed && !podspec.HasPodLevelResources(pod)
}

// Allocate pins a container's memory and huge pages to NUMA nodes, under
// the static policy for a Guaranteed pod: the topology manager's affinity
// (Options.Affinity) or, without one, the best of the container's hints;
// an affinity too small for the request is widened to the narrowest hint
// that contains it. Memory the pod's earlier regular init containers hold
// on the same nodes is reused. A container that holds memory already
// keeps it. Errors are upstream's ("[memorymanager] ..."); nothing is held
// then.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container) (err error) {
	if !m.pinned(pod) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.o.Metrics != nil {
		defer func() { m.o.Metrics.MemoryPinning(err != nil) }()
	}
	if blocks, ok := m.st.assignments[pod.UID][c.Name]; ok {
		m.updateReusable(pod, c, blocks)
		return nil
	}
	var hint topologymanager.Hint
	if m.o.Affinity != nil {
		hint = m.o.Affinity.Affinity(pod.UID, c.Name)
	}
	req, err := requested(pod, c)
	if err != nil {
		return err
	}
	best := hint
	if hint.NUMANodes.IsEmpty() {
		hints := m.calculateHints(pod, req)
		if len(hints) == 0 {
			return errors.New("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		def := findBestHint(hints[string(v1.ResourceMemory)])
		if !def.Preferred && best.Preferred {
			return errors.New("[memorymanager] failed to find the default preferred hint")
		}
		best = def
	}
	if !m.satisfies(best.NUMANodes, req) {
		var within []topologymanager.Hint
		for _, h := range m.calculateHints(pod, req)[string(v1.ResourceMemory)] {
			if h.NUMANodes.And(best.NUMANodes) == best.NUMANodes {
				within = append(within, h)
			}
		}
		if len(within) == 0 {
			return errors.New("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		ext := findBestHint(within)
		if !ext.Preferred && best.Preferred {
			return errors.New("[memorymanager] failed to find the extended preferred hint")
		}
		best = ext
	}
	if m.violatesGroups(best.NUMANodes) {
		return errors.New("[memorymanager] preferred hint violates NUMA node allocation")
	}
	nodes := best.NUMANodes.Nodes()
	var blocks []Block
	for _, name := range slices.Sorted(maps.Keys(req)) {
		size := req[name]
		blocks = append(blocks, Block{NUMAAffinity: slices.Clone(nodes), Type: name, Size: size})
		size -= min(size, m.reusableOf(pod.UID, best.NUMANodes, name))
		m.st.machine.reserve(nodes, name, size)
	}
	m.updateReusable(pod, c, blocks)
	if m.st.assignments[pod.UID] == nil {
		m.st.assignments[pod.UID] = map[string][]Block{}
	}
	m.st.assignments[pod.UID][c.Name] = blocks
	m.shrinkInitBlocks(pod, c, blocks)
	m.log.Info("Allocated exclusive memory", "pod", podName(pod), "container", c.Name, "numaNodes", best.NUMANodes.String())
	m.persist()
	return nil
}

// satisfies reports whether the free memory of mask's nodes covers req.
func (m *Manager) satisfies(mask topologymanager.Mask, req map[v1.ResourceName]uint64) bool {
	for name, size := range req {
		var free uint64
		for _, id := range mask.Nodes() {
			free += m.st.machine.table(id, name).Free
		}
		if free < size {
			return false
		}
	}
	return true
}

// violatesGroups reports whether an allocation on mask would mix single-
// and multi-NUMA allocations on a node, or group a node with other nodes
// than it is grouped with already.
func (m *Manager) violatesGroups(mask topologymanager.Mask) bool {
	nodes := mask.Nodes()
	if len(nodes) <= 1 {
		return false
	}
	for _, id := range nodes {
		n := m.st.machine[id]
		if n == nil || n.NumberOfAssignments == 0 {
			continue
		}
		if len(n.Cells) == 1 || topologymanager.NewMask(n.Cells...) != mask {
			return true
		}
	}
	return false
}

// findBestHint is a preferred hint over a non-preferred one, then the
// narrower; the zero Hint for none.
func findBestHint(hints []topologymanager.Hint) topologymanager.Hint {
	var best topologymanager.Hint
	for _, h := range hints {
		switch {
		case best.NUMANodes.IsEmpty():
			best = h
		case h.Preferred && !best.Preferred:
			best = h
		case h.Preferred == best.Preferred && h.NUMANodes.IsNarrowerThan(best.NUMANodes):
			best = h
		}
	}
	return best
}

func (m *Manager) reusableOf(uid types.UID, mask topologymanager.Mask, name v1.ResourceName) uint64 {
	return m.reusable[uid][mask][name]
}

// updateReusable records a regular init container's blocks as reusable by
// the pod's later containers, or takes what a later container used out of
// them. Only the pod being admitted keeps reusable memory.
func (m *Manager) updateReusable(pod *v1.Pod, c *v1.Container, blocks []Block) {
	for uid := range m.reusable {
		if uid != pod.UID {
			delete(m.reusable, uid)
		}
	}
	if podspec.IsRegularInitContainer(pod, c) {
		r := m.reusable[pod.UID]
		if r == nil {
			r = map[topologymanager.Mask]map[v1.ResourceName]uint64{}
			m.reusable[pod.UID] = r
		}
		for _, b := range blocks {
			if r[b.mask()] == nil {
				r[b.mask()] = map[v1.ResourceName]uint64{}
			}
			r[b.mask()][b.Type] = max(r[b.mask()][b.Type], b.Size)
		}
		return
	}
	for _, b := range blocks {
		if have := m.reusableOf(pod.UID, b.mask(), b.Type); have != 0 {
			m.reusable[pod.UID][b.mask()][b.Type] = have - min(have, b.Size)
		}
	}
}

// shrinkInitBlocks takes what a container reused out of the blocks of the
// regular init containers before it, so that the pod's blocks add up to
// what the pod holds.
func (m *Manager) shrinkInitBlocks(pod *v1.Pod, c *v1.Container, blocks []Block) {
	for _, cb := range blocks {
		size := cb.Size
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.Name == c.Name || size == 0 {
				break
			}
			if podspec.IsSidecar(ic) {
				continue
			}
			ibs := m.st.assignments[pod.UID][ic.Name]
			for j := range ibs {
				b := &ibs[j]
				if b.Size == 0 || b.Type != cb.Type || b.mask() != cb.mask() {
					continue
				}
				take := min(size, b.Size)
				b.Size -= take
				size -= take
			}
		}
	}
}

// Admit allocates the memory of a pod's containers, init containers first,
// as an admission handler (package admission's Handler) for when no
// topology manager calls Allocate. A refusal holds nothing: the memory
// already given to the pod's other containers is released. The reason and
// message are topologymanager.AdmitResult's: UnexpectedAdmissionError,
// "Allocate failed due to …, which is unexpected".
func (m *Manager) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	return topologymanager.AdmitAll(pod, m.Allocate, m.RemovePod)
}

// AddContainer tells the manager that a container of the pod starts: the
// regular init containers before it have finished, and their memory goes
// back to the nodes (sidecars keep theirs), as upstream's AddContainer.
func (m *Manager) AddContainer(pod *v1.Pod, c *v1.Container) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			break
		}
		if !podspec.IsSidecar(ic) && m.removeContainer(pod.UID, ic.Name) {
			changed = true
		}
	}
	if changed {
		m.persist()
	}
}

// RemoveContainer releases a container's memory.
func (m *Manager) RemoveContainer(uid types.UID, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removeContainer(uid, container) {
		m.persist()
	}
}

// RemovePod releases the memory of every container of a pod.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reusable, uid)
	changed := false
	for _, name := range slices.Sorted(maps.Keys(m.st.assignments[uid])) {
		changed = m.removeContainer(uid, name) || changed
	}
	if changed {
		m.persist()
	}
}

// RemoveStaleState releases the memory of every container that is not a
// container of an active pod (upstream's removeStaleState, which it runs
// before every hint and allocation): the caller passes the pods that are
// still active, at housekeeping.
func (m *Manager) RemoveStaleState(active []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[types.UID]map[string]bool{}
	for _, p := range active {
		live[p.UID] = map[string]bool{}
		for _, c := range podspec.Containers(p) {
			live[p.UID][c.Name] = true
		}
	}
	changed := false
	for _, uid := range slices.Sorted(maps.Keys(m.st.assignments)) {
		for _, name := range slices.Sorted(maps.Keys(m.st.assignments[uid])) {
			if !live[uid][name] {
				m.log.Info("RemoveStaleState removing state", "podUID", uid, "containerName", name)
				changed = m.removeContainer(uid, name) || changed
			}
		}
	}
	if changed {
		m.persist()
	}
}

func (m *Manager) removeContainer(uid types.UID, name string) bool {
	blocks, ok := m.st.assignments[uid][name]
	if !ok {
		return false
	}
	delete(m.st.assignments[uid], name)
	if len(m.st.assignments[uid]) == 0 {
		delete(m.st.assignments, uid)
	}
	for _, b := range blocks {
		m.st.machine.release(b)
	}
	m.log.Info("RemoveContainer", "podUID", uid, "containerName", name)
	return true
}

func (m *Manager) persist() {
	if err := m.save(); err != nil {
		m.log.Error("Could not write the memory manager checkpoint", "err", err)
	}
}

// Blocks returns a copy of a container's memory blocks (nil without any).
func (m *Manager) Blocks(uid types.UID, container string) []Block {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs, ok := m.st.assignments[uid][container]
	if !ok {
		return nil
	}
	return cloneBlocks(bs)
}

// Assignments returns a copy of every container's memory blocks, by pod.
func (m *Manager) Assignments() map[types.UID]map[string][]Block {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[types.UID]map[string][]Block, len(m.st.assignments))
	for uid, cs := range m.st.assignments {
		out[uid] = make(map[string][]Block, len(cs))
		for name, bs := range cs {
			out[uid][name] = cloneBlocks(bs)
		}
	}
	return out
}

// MachineState returns a copy of every NUMA node's memory accounts, by
// node ID (empty under PolicyNone).
func (m *Manager) MachineState() map[int]*NUMANodeState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.machine.clone()
}

// nodesOf is the union of the blocks' NUMA nodes.
func nodesOf(blocks []Block) cpuset.CPUSet {
	var ids []int
	for _, b := range blocks {
		ids = append(ids, b.NUMAAffinity...)
	}
	return cpuset.New(ids...)
}

// ContainerMemoryNodes gives the NUMA nodes of a container's memory in
// Linux list syntax ("0", "0-1"), for its CRI config (cpuset_mems); empty
// when the container holds no memory.
func (m *Manager) ContainerMemoryNodes(pod *v1.Pod, c *v1.Container) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nodesOf(m.st.assignments[pod.UID][c.Name]).String()
}

// Memory returns a container's memory blocks as the pod-resources API
// reports them (type, size, NUMA nodes); nil without any.
func (m *Manager) Memory(uid types.UID, container string) []*podresourcesapi.ContainerMemory {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*podresourcesapi.ContainerMemory
	for _, b := range m.st.assignments[uid][container] {
		out = append(out, containerMemory(b.Type, b.Size, b.NUMAAffinity))
	}
	return out
}

// AllocatableMemory returns, for the pod-resources API, each NUMA node's
// allocatable bytes of each memory resource (resources with none left
// out), by node then resource name; empty under PolicyNone.
func (m *Manager) AllocatableMemory() []*podresourcesapi.ContainerMemory {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*podresourcesapi.ContainerMemory{}
	for _, id := range m.st.machine.nodes() {
		mm := m.st.machine[id].MemoryMap
		for _, name := range slices.Sorted(maps.Keys(mm)) {
			if mm[name].Allocatable == 0 {
				continue
			}
			out = append(out, containerMemory(name, mm[name].Allocatable, []int{id}))
		}
	}
	return out
}

func containerMemory(name v1.ResourceName, size uint64, nodes []int) *podresourcesapi.ContainerMemory {
	t := &podresourcesapi.TopologyInfo{Nodes: []*podresourcesapi.NUMANode{}}
	for _, id := range nodes {
		t.Nodes = append(t.Nodes, &podresourcesapi.NUMANode{ID: int64(id)})
	}
	return &podresourcesapi.ContainerMemory{MemoryType: string(name), Size: size, Topology: t}
}

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (m *Manager) statePath() string {
	if m.o.StateDir == "" {
		return ""
	}
	return filepath.Join(m.o.StateDir, StateFileName)
}
