package cpumanager

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

var _ topologymanager.HintProvider = (*Manager)(nil)

// ContainerHints are the NUMA affinities a container's exclusive CPUs
// could come from, for the topology manager (resource "cpu"): every set of
// NUMA nodes whose free CPUs (with the pod's reusable ones) cover the
// request, preferred when no smaller set of nodes has that many CPUs at
// all. A container that holds CPUs already gets the hints of those CPUs;
// one whose held CPUs no longer match its request gets none (it cannot be
// satisfied). No exclusive CPUs: nil, no preference.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
	if m.o.Policy != PolicyStatic {
		return nil
	}
	if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
		return nil
	}
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if held, ok := m.st.assignments[pod.UID][c.Name]; ok {
		if held.Size() != n {
			return map[string][]topologymanager.Hint{string(v1.ResourceCPU): {}}
		}
		return map[string][]topologymanager.Hint{string(v1.ResourceCPU): m.hints(held, n)}
	}
	available := m.st.defaultSet.Difference(m.reserved).Union(m.reusable[pod.UID])
	return map[string][]topologymanager.Hint{string(v1.ResourceCPU): m.hints(available, n)}
}

// PodHints are ContainerHints for the whole pod (topology manager scope
// "pod"): the CPUs the pod needs at once, the larger of its largest
// regular init container and its app containers with its sidecars.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	if m.o.Policy != PolicyStatic || podspec.QOSClass(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	n := podGuaranteedCPUs(pod)
	if n == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cs, ok := m.st.assignments[pod.UID]; ok {
		held := cpuset.New()
		for _, s := range cs {
			held = held.Union(s)
		}
		return map[string][]topologymanager.Hint{string(v1.ResourceCPU): m.hints(held, min(n, held.Size()))}
	}
	available := m.st.defaultSet.Difference(m.reserved).Union(m.reusable[pod.UID])
	return map[string][]topologymanager.Hint{string(v1.ResourceCPU): m.hints(available, n)}
}

// podGuaranteedCPUs is what a pod needs at once: its app containers and
// sidecars together, or its largest regular init container (which runs
// beside the sidecars started before it), whichever is more.
func podGuaranteedCPUs(pod *v1.Pod) int {
	apps, sidecars, initMax := 0, 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := GuaranteedCPUs(pod, c)
		if podspec.IsSidecar(c) {
			sidecars += n
			continue
		}
		initMax = max(initMax, sidecars+n)
	}
	for i := range pod.Spec.Containers {
		apps += GuaranteedCPUs(pod, &pod.Spec.Containers[i])
	}
	return max(apps+sidecars, initMax)
}

// hints lists the NUMA masks whose CPUs among from cover n, preferred when
// the mask is as small as any mask whose CPUs (free or not) could.
func (m *Manager) hints(from cpuset.CPUSet, n int) []topologymanager.Hint {
	t := m.o.Topology
	return topologymanager.MinimalHints(t.NUMANodes(), func(mask topologymanager.Mask) (bool, bool) {
		in := t.CPUsInNUMANodes(mask.Nodes()...)
		return from.Intersection(in).Size() >= n, in.Size() >= n
	})
}
