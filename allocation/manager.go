package allocation

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// podAllocation is what the node allocated to one pod: the resources of
// each container a resize may change, by container name.
type podAllocation map[string]v1.ResourceRequirements

// Manager is the node's allocation state, upstream's allocation manager:
// what each admitted pod's containers were given, the resizes waiting for
// room, and each pod's resize conditions. It is safe for concurrent use.
type Manager struct {
	path  string
	clock clock.PassiveClock
	log   *slog.Logger
	rec   EventRecorder
	node  NodeAllocatable
	pods  Pods
	// cpuStatic: a Guaranteed pod's CPU resize is Infeasible
	// (Options.CPUManagerStatic).
	cpuStatic bool
	memStatic bool // Options.MemoryManagerStatic
	// podLevelOff: a resize of spec.resources is Infeasible
	// (Options.PodLevelResizeDisabled).
	podLevelOff bool

	mu       sync.Mutex
	dirty    bool // allocations changed since the checkpoint was written
	allocs   map[types.UID]podAllocation
	podLevel map[types.UID]*v1.ResourceRequirements // spec.resources as allocated, of the pods that set it
	conds    map[types.UID]*conditions
	deferred []types.UID // in the order they were deferred
}

// New validates opts and builds a Manager with no allocation. It starts
// nothing and touches no disk: Load reads the checkpoint.
func New(opts Options) (*Manager, error) {
	if opts.Node == nil {
		return nil, ErrMissingNode
	}
	if opts.Pods == nil {
		return nil, ErrMissingPods
	}
	if opts.CheckpointPath != "" && !filepath.IsAbs(opts.CheckpointPath) {
		return nil, fmt.Errorf("allocation: checkpoint path %q is not absolute: %w", opts.CheckpointPath, ErrInvalidOptions)
	}
	m := &Manager{path: opts.CheckpointPath, clock: opts.Clock, log: opts.Logger, rec: opts.Recorder,
		node: opts.Node, pods: opts.Pods, cpuStatic: opts.CPUManagerStatic, memStatic: opts.MemoryManagerStatic,
		podLevelOff: opts.PodLevelResizeDisabled, allocs: map[types.UID]podAllocation{},
		podLevel: map[types.UID]*v1.ResourceRequirements{}, conds: map[types.UID]*conditions{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// resizable calls f with each container a resize may change, in spec
// order: the init containers, sidecars and regular ones alike (upstream's
// IsResizableContainer with InPlacePodVerticalScalingInitContainers, beta
// and on by default since 1.36), then the app containers. Ephemeral
// containers have no resources to resize.
func resizable(pod *v1.Pod, f func(c *v1.Container)) {
	for i := range pod.Spec.InitContainers {
		f(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
}

// AllocatedPod returns pod as the node runs it, its containers' and its
// pod-level resources (spec.resources, upstream's
// InPlacePodLevelResourcesVerticalScaling) as allocated, and whether they
// differ from its spec's: a resize is asked for and not (yet) taken. The
// pod is copied only when they differ, and then deeply (pods are shared
// read-only); a pod never allocated comes back as it is, with false.
func (m *Manager) AllocatedPod(pod *v1.Pod) (*v1.Pod, bool) {
	m.mu.Lock()
	alloc, ok := m.allocs[pod.UID]
	podLevel := m.podLevel[pod.UID]
	m.mu.Unlock()
	if !ok {
		return pod, false
	}
	differs := !podLevelEqual(podLevel, pod.Spec.Resources)
	resizable(pod, func(c *v1.Container) {
		if r, ok := alloc[c.Name]; ok && !equality.Semantic.DeepEqual(r, c.Resources) {
			differs = true
		}
	})
	if !differs {
		return pod, false
	}
	out := pod.DeepCopy()
	out.Spec.Resources = podLevel.DeepCopy()
	resizable(out, func(c *v1.Container) {
		if r, ok := alloc[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	})
	return out, true
}

// podLevelEqual says whether two pod-level resources are the same
// allocation, upstream's semantic equality (nil and empty differ).
func podLevelEqual(a, b *v1.ResourceRequirements) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// SetAllocated records pod's containers' and pod-level resources as
// allocated: the agent calls it with the pod it admitted (as allocated).
// The checkpoint is written by Flush, once for a batch of pods (a burst of
// 500 admissions is one write, not 500).
func (m *Manager) SetAllocated(pod *v1.Pod) {
	alloc := podAllocation{}
	resizable(pod, func(c *v1.Container) { alloc[c.Name] = *c.Resources.DeepCopy() })
	podLevel := pod.Spec.Resources.DeepCopy()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.allocs[pod.UID]; ok && equality.Semantic.DeepEqual(old, alloc) &&
		podLevelEqual(m.podLevel[pod.UID], podLevel) {
		return
	}
	m.allocs[pod.UID] = alloc
	if podLevel != nil {
		m.podLevel[pod.UID] = podLevel
	} else {
		delete(m.podLevel, pod.UID)
	}
	m.dirty = true
}

// Flush writes the checkpoint if SetAllocated (or HandleResize) changed an
// allocation since it was last written.
func (m *Manager) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirty {
		m.saveLocked()
	}
}

// RemovePod forgets a pod: its allocation (the checkpoint is written at
// once), its conditions and its deferred resize.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conds, uid)
	m.deferred = slices.DeleteFunc(m.deferred, func(u types.UID) bool { return u == uid })
	if _, ok := m.allocs[uid]; ok {
		delete(m.allocs, uid)
		delete(m.podLevel, uid)
		m.saveLocked()
	}
}

// RemoveOrphanedPods forgets the allocations and conditions of the pods
// keep says no to: for the agent, those neither desired nor known to the
// pod workers, the checkpoint's pods that never came back after a restart
// among them. keep is called with the Manager's lock held.
func (m *Manager) RemoveOrphanedPods(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.allocs)
	for uid := range m.allocs {
		if !keep(uid) {
			delete(m.allocs, uid)
			delete(m.podLevel, uid)
			delete(m.conds, uid)
		}
	}
	if len(m.allocs) != n {
		m.saveLocked()
	}
}
