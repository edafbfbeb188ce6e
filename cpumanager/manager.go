package cpumanager

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// The policies of cpuManagerPolicy (--cpu-manager-policy).
const (
	// PolicyNone gives no CPU exclusively: every container runs on every
	// CPU, as without a CPU manager. Upstream's default.
	PolicyNone = "none"
	// PolicyStatic gives the containers of Guaranteed pods that request
	// whole CPUs those CPUs exclusively; every other container runs on the
	// shared pool, the CPUs no container holds.
	PolicyStatic = "static"
)

// The static policy's options (cpuManagerPolicyOptions) this block
// implements; any other option is refused by name.
const (
	// OptionFullPCPUsOnly refuses a container whose exclusive CPUs would not
	// fill whole physical cores (SMTAlignmentError).
	OptionFullPCPUsOnly = "full-pcpus-only"
	// OptionStrictCPUReservation keeps the reserved CPUs out of the shared
	// pool: best-effort and burstable containers do not run on them.
	OptionStrictCPUReservation = "strict-cpu-reservation"
)

// StateFileName is the checkpoint's file name in Options.StateDir, upstream's.
const StateFileName = "cpu_manager_state"

// ErrInvalidOptions is wrapped by New's errors about its options.
var ErrInvalidOptions = errors.New("cpumanager: invalid options")

// Options configure a Manager.
type Options struct {
	// Policy is PolicyNone (the default, "") or PolicyStatic.
	Policy string
	// PolicyOptions are cpuManagerPolicyOptions: OptionFullPCPUsOnly and
	// OptionStrictCPUReservation with a boolean value ("true"); only with
	// PolicyStatic.
	PolicyOptions map[string]string
	// Topology is the machine's CPUs. Required with PolicyStatic; for
	// PolicyNone it only fills AllocatableCPUs' answer (empty).
	Topology *Topology
	// Reserved are reservedSystemCPUs (--reserved-cpus): the CPUs kept for
	// the system and the kubelet, never given exclusively. When empty, the
	// static policy reserves ceil(ReservedMilliCPU/1000) CPUs, taken as
	// Take takes them, and needs that to be at least one.
	Reserved cpuset.CPUSet
	// ReservedMilliCPU is kubeReserved's plus systemReserved's cpu, in
	// millicores.
	ReservedMilliCPU int64
	// StateDir is where the checkpoint (StateFileName) lives, the kubelet's
	// root directory. Empty: the state lives in memory only.
	StateDir string
	// Affinity gives the NUMA nodes the topology manager chose for each
	// container (topologymanager.Manager): its CPUs are taken from them
	// first. nil: no preference.
	Affinity topologymanager.Store
	// Metrics receives the static policy's figures (upstream's
	// cpu_manager_* series); nil means none.
	Metrics Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Metrics receives the CPU manager's figures, as upstream's kubelet counts
// them. Its methods are called with the Manager's lock held and must not
// call back into it or block.
type Metrics interface {
	// Pinning counts one container that asks for exclusive CPUs
	// (cpu_manager_pinning_requests_total), whether its allocation failed
	// (cpu_manager_pinning_errors_total), and whether full-pcpus-only was
	// in force (container_aligned_compute_resources_count, or its
	// _failure_count, with scope "container" and boundary "physical_cpu").
	Pinning(failed, fullPCPUs bool)
	// Pool reports the state after New and after every change: the shared
	// pool without the reserved CPUs in millicores
	// (cpu_manager_shared_pool_size_millicores), the CPUs held exclusively
	// (cpu_manager_exclusive_cpu_allocation_count) and those by NUMA node
	// (cpu_manager_allocation_per_numa, every node of the machine).
	Pool(sharedMilliCPU int64, exclusive int, byNUMA map[int]int)
}

// Manager is the CPU manager: it decides which CPUs each container may run
// on, keeps that in a checkpoint, and tells the runtime (through the
// container config and Reconcile). It is safe for concurrent use.
type Manager struct {
	o        Options
	log      *slog.Logger
	reserved cpuset.CPUSet
	full     bool // full-pcpus-only
	strict   bool // strict-cpu-reservation

	mu sync.Mutex
	st state
	// reusable are, by pod, the CPUs its regular init containers held:
	// the app containers take them first (they never run together).
	reusable map[types.UID]cpuset.CPUSet
	applied  map[string]cpuset.CPUSet // container ID → cpuset last given to the runtime
}

// state is what the checkpoint holds.
type state struct {
	policy      string
	defaultSet  cpuset.CPUSet
	assignments map[types.UID]map[string]cpuset.CPUSet
}

// New builds a Manager and reads its checkpoint. A checkpoint of another
// policy, or one whose CPUs do not add up to the machine's, is an error,
// as upstream refuses to start on it; the operator drains the node and
// removes the file.
func New(opts Options) (*Manager, error) {
	if opts.Policy == "" {
		opts.Policy = PolicyNone
	}
	m := &Manager{o: opts, log: opts.Logger, reusable: map[types.UID]cpuset.CPUSet{}, applied: map[string]cpuset.CPUSet{}, reserved: cpuset.New()}
	if m.log == nil {
		m.log = slog.Default()
	}
	switch opts.Policy {
	case PolicyNone:
		if len(opts.PolicyOptions) > 0 {
			return nil, fmt.Errorf("%w: cpuManagerPolicyOptions %v need the static policy", ErrInvalidOptions, slices.Sorted(maps.Keys(opts.PolicyOptions)))
		}
	case PolicyStatic:
		if err := m.static(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown policy: %q", ErrInvalidOptions, opts.Policy)
	}
	m.st = state{policy: opts.Policy, defaultSet: cpuset.New(), assignments: map[types.UID]map[string]cpuset.CPUSet{}}
	if opts.Topology != nil {
		m.st.defaultSet = opts.Topology.All()
	}
	if err := m.restore(); err != nil {
		return nil, err
	}
	if opts.Policy == PolicyStatic {
		m.reportPool()
	}
	return m, nil
}

// reportPool gives Options.Metrics the state (mu held, or before the
// Manager is shared).
func (m *Manager) reportPool() {
	if m.o.Metrics == nil {
		return
	}
	held := m.held()
	byNUMA := map[int]int{}
	for _, n := range m.o.Topology.NUMANodes() {
		byNUMA[n] = held.Intersection(m.o.Topology.CPUsInNUMANodes(n)).Size()
	}
	m.o.Metrics.Pool(int64(m.st.defaultSet.Difference(m.reserved).Size())*1000, held.Size(), byNUMA)
}

// static validates the static policy's options and picks the reserved CPUs.
func (m *Manager) static() error {
	t := m.o.Topology
	if t == nil {
		return fmt.Errorf("%w: the static policy needs the machine's Topology", ErrInvalidOptions)
	}
	for _, k := range slices.Sorted(maps.Keys(m.o.PolicyOptions)) {
		v, err := strconv.ParseBool(m.o.PolicyOptions[k])
		switch k {
		case OptionFullPCPUsOnly, OptionStrictCPUReservation:
			if err != nil {
				return fmt.Errorf("%w: bad value for option %q: %w", ErrInvalidOptions, k, err)
			}
		default:
			return fmt.Errorf("%w: unknown CPU Manager Policy option: %q", ErrInvalidOptions, k)
		}
		if k == OptionFullPCPUsOnly {
			m.full = v
		} else {
			m.strict = v
		}
	}
	all := t.All()
	if m.o.Reserved.Size() > 0 {
		if !m.o.Reserved.IsSubsetOf(all) {
			return fmt.Errorf("%w: reserved CPUs %s are not all on this machine (%s)", ErrInvalidOptions, m.o.Reserved, all)
		}
		m.reserved = m.o.Reserved
		return nil
	}
	n := int((m.o.ReservedMilliCPU + 999) / 1000)
	if n == 0 {
		return fmt.Errorf("%w: the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero", ErrInvalidOptions)
	}
	r, err := Take(t, all, n)
	if err != nil {
		return fmt.Errorf("%w: unable to reserve the required amount of CPUs (size of %s did not equal %d)", ErrInvalidOptions, r, n)
	}
	m.reserved = r
	return nil
}

// Policy returns the policy's name.
func (m *Manager) Policy() string { return m.o.Policy }

// Reserved returns the CPUs the static policy keeps for the system.
func (m *Manager) Reserved() cpuset.CPUSet { return m.reserved }

// GuaranteedCPUs is the number of CPUs a container gets exclusively under
// the static policy: its CPU request when the pod is Guaranteed and the
// request is a whole number of CPUs; 0 otherwise, and for a pod with
// pod-level resources (upstream skips those without its alpha
// PodLevelResourceManagers).
func GuaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if podspec.QOSClass(pod) != v1.PodQOSGuaranteed || podspec.HasPodLevelResources(pod) {
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// Allocate gives a container its exclusive CPUs, if the policy gives it
// any: from the NUMA nodes of Options.Affinity first, packed (Take). A
// container that holds CPUs already keeps them. Errors: too few CPUs
// (upstream's "not enough cpus available to satisfy request" message) or
// an SMTAlignmentError; nothing is held then.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container) error {
	if m.o.Policy != PolicyStatic {
		return nil
	}
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.allocate(pod, c, n)
	if m.o.Metrics != nil {
		m.o.Metrics.Pinning(err != nil, m.full)
	}
	return err
}

// allocate is Allocate's work for a container that asks for n exclusive
// CPUs (mu held).
func (m *Manager) allocate(pod *v1.Pod, c *v1.Container, n int) error {
	if _, ok := m.st.assignments[pod.UID][c.Name]; ok {
		return nil
	}
	t := m.o.Topology
	available := m.st.defaultSet.Difference(m.reserved).Union(m.reusable[pod.UID])
	if m.full {
		perCore := t.CPUsPerCore()
		if n%perCore != 0 {
			return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: perCore}
		}
		if free := m.freeWholeCoreCPUs(available); free < n {
			return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: perCore, AvailablePhysicalCPUs: free, CausedByPhysicalCPUs: true}
		}
	}
	var nodes []int
	if m.o.Affinity != nil {
		nodes = m.o.Affinity.Affinity(pod.UID, c.Name).NUMANodes.Nodes()
	}
	cpus, err := TakeAligned(t, available, n, nodes)
	if err != nil {
		return err
	}
	if m.st.assignments[pod.UID] == nil {
		m.st.assignments[pod.UID] = map[string]cpuset.CPUSet{}
	}
	m.st.assignments[pod.UID][c.Name] = cpus
	m.st.defaultSet = m.st.defaultSet.Difference(cpus)
	m.updateReusable(pod, c, cpus)
	m.log.Info("Allocated exclusive CPUs", "pod", klogName(pod), "container", c.Name, "cpus", cpus.String())
	m.reportPool()
	if err := m.save(); err != nil {
		m.log.Error("Could not write the CPU manager checkpoint", "err", err)
	}
	return nil
}

// freeWholeCoreCPUs counts the CPUs of available that belong to cores all
// of whose CPUs are available.
func (m *Manager) freeWholeCoreCPUs(available cpuset.CPUSet) int {
	n := 0
	for _, core := range m.o.Topology.ids(func(c CPU) int { return c.Core }) {
		cpus := m.o.Topology.filter(func(c CPU) bool { return c.Core == core })
		if cpus.IsSubsetOf(available) {
			n += cpus.Size()
		}
	}
	return n
}

// updateReusable records a regular init container's CPUs for the pod's
// later containers, and takes an app container's CPUs out of them.
func (m *Manager) updateReusable(pod *v1.Pod, c *v1.Container, cpus cpuset.CPUSet) {
	r, ok := m.reusable[pod.UID]
	if !ok {
		// Reuse is for one pod at a time, as upstream keeps it.
		clear(m.reusable)
		r = cpuset.New()
	}
	if podspec.IsRegularInitContainer(pod, c) {
		m.reusable[pod.UID] = r.Union(cpus)
		return
	}
	m.reusable[pod.UID] = r.Difference(cpus)
}

// Admit allocates the CPUs of a pod's containers, init containers first, as
// an admission handler (package admission's Handler) for when no topology
// manager calls Allocate. A refusal holds nothing: the CPUs already given
// to the pod's other containers are released. Reasons are upstream's: an
// error's Type (SMTAlignmentError), else UnexpectedAdmissionError with
// "Allocate failed due to …, which is unexpected".
func (m *Manager) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	return topologymanager.AdmitAll(pod, m.Allocate, m.RemovePod)
}

// RemovePod releases a pod's CPUs to the shared pool (a CPU another
// container still holds stays out of it).
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removePod(uid) {
		if err := m.save(); err != nil {
			m.log.Error("Could not write the CPU manager checkpoint", "err", err)
		}
	}
}

func (m *Manager) removePod(uid types.UID) bool {
	delete(m.reusable, uid)
	held, ok := m.st.assignments[uid]
	if !ok {
		return false
	}
	delete(m.st.assignments, uid)
	release := cpuset.New()
	for _, s := range held {
		release = release.Union(s)
	}
	m.st.defaultSet = m.st.defaultSet.Union(release.Difference(m.held()))
	m.log.Info("Released exclusive CPUs", "podUID", uid, "cpus", release.String())
	m.reportPool()
	return true
}

// held is every CPU some container holds.
func (m *Manager) held() cpuset.CPUSet {
	out := cpuset.New()
	for _, cs := range m.st.assignments {
		for _, s := range cs {
			out = out.Union(s)
		}
	}
	return out
}

// ContainerCPUs returns the CPUs a container may run on: its exclusive
// CPUs, or the shared pool (the default set, without the reserved CPUs
// under strict-cpu-reservation). Empty under PolicyNone: the runtime's
// default, every CPU.
func (m *Manager) ContainerCPUs(uid types.UID, container string) cpuset.CPUSet {
	if m.o.Policy != PolicyStatic {
		return cpuset.New()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.containerCPUs(uid, container)
}

func (m *Manager) containerCPUs(uid types.UID, container string) cpuset.CPUSet {
	if s, ok := m.st.assignments[uid][container]; ok {
		return s
	}
	if m.strict {
		return m.st.defaultSet.Difference(m.reserved)
	}
	return m.st.defaultSet
}

// Exclusive returns a container's exclusive CPUs (empty without any).
func (m *Manager) Exclusive(uid types.UID, container string) cpuset.CPUSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.st.assignments[uid][container]; ok {
		return s
	}
	return cpuset.New()
}

// ContainerHasExclusiveCPUs reports whether a container holds exclusive
// CPUs (its CFS quota is then lifted, DisableCPUQuotaWithExclusiveCPUs).
func (m *Manager) ContainerHasExclusiveCPUs(pod *v1.Pod, c *v1.Container) bool {
	return m.Exclusive(pod.UID, c.Name).Size() > 0
}

// PodHasExclusiveCPUs reports whether any container of the pod holds
// exclusive CPUs (the pod cgroup's CFS quota is then lifted).
func (m *Manager) PodHasExclusiveCPUs(pod *v1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.st.assignments[pod.UID] {
		if s.Size() > 0 {
			return true
		}
	}
	return false
}

// CPUs returns a container's exclusive CPU IDs, for the pod-resources API.
func (m *Manager) CPUs(uid types.UID, container string) []int64 {
	return toInt64(m.Exclusive(uid, container))
}

// AllocatableCPUs returns the CPUs that can be given exclusively (every CPU
// but the reserved ones; none under PolicyNone), for the pod-resources API.
func (m *Manager) AllocatableCPUs() []int64 {
	if m.o.Policy != PolicyStatic {
		return []int64{}
	}
	return toInt64(m.o.Topology.All().Difference(m.reserved))
}

// DefaultCPUs returns the shared pool: the CPUs no container holds.
func (m *Manager) DefaultCPUs() cpuset.CPUSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.defaultSet
}

// Assignments returns a copy of every container's exclusive CPUs, by pod.
func (m *Manager) Assignments() map[types.UID]map[string]cpuset.CPUSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[types.UID]map[string]cpuset.CPUSet, len(m.st.assignments))
	for uid, cs := range m.st.assignments {
		out[uid] = maps.Clone(cs)
	}
	return out
}

func toInt64(s cpuset.CPUSet) []int64 {
	out := make([]int64, 0, s.Size())
	for _, c := range s.List() {
		out = append(out, int64(c))
	}
	return out
}

func klogName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (m *Manager) statePath() string {
	if m.o.StateDir == "" {
		return ""
	}
	return filepath.Join(m.o.StateDir, StateFileName)
}

// sortedUIDs is the state's pods in order.
func sortedUIDs[V any](m map[types.UID]V) []types.UID {
	out := slices.Collect(maps.Keys(m))
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ContainerCPUSet gives a container's CPUs in Linux list syntax and whether
// they are its own, for its CRI config (containerconfig.ContainerCPUs):
// ContainerCPUs, and whether the container holds exclusive CPUs.
func (m *Manager) ContainerCPUSet(pod *v1.Pod, c *v1.Container) (cpus string, exclusive bool) {
	if m.o.Policy != PolicyStatic {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, exclusive = m.st.assignments[pod.UID][c.Name]
	return m.containerCPUs(pod.UID, c.Name).String(), exclusive
}
