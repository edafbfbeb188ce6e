package memorymanager

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

var _ topologymanager.HintProvider = (*Manager)(nil)

// ContainerHints are the NUMA affinities a container's memory and huge
// pages could come from, by resource name, for the topology manager
// (upstream's static policy): every set of NUMA nodes whose free memory
// (with the pod's reusable init container memory) covers each request,
// preferred when no smaller set of nodes has that much allocatable memory
// at all. A set of several nodes is left out when one of its nodes already
// holds memory alone or grouped with other nodes; a single node when it is
// grouped with others. With no set left, the map is empty (no preference:
// Allocate refuses the container later, as upstream).
//
// A container that holds memory already gets its blocks' nodes, preferred;
// nil (no preference) when its blocks no longer match its requests. Not
// Guaranteed, pod-level resources or PolicyNone: nil.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
	if !m.pinned(pod) {
		return nil
	}
	req, err := requested(pod, c)
	if err != nil {
		m.log.Error("Failed to get container requested resources", "pod", podName(pod), "containerName", c.Name, "err", err)
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if blocks, ok := m.st.assignments[pod.UID][c.Name]; ok {
		return m.regenerateHints(pod, c, blocks, req)
	}
	return m.calculateHints(pod, req)
}

// PodHints are ContainerHints for the whole pod (topology manager scope
// "pod"): the memory the pod needs at once, for each resource the larger
// of its app containers with its sidecars and its largest regular init
// container with the sidecars started before it. A pod one of whose
// containers holds memory already gets that container's blocks' nodes.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	if !m.pinned(pod) {
		return nil
	}
	req, err := podRequested(pod)
	if err != nil {
		m.log.Error("Failed to get pod requested resources", "pod", podName(pod), "err", err)
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range podspec.Containers(pod) {
		if blocks, ok := m.st.assignments[pod.UID][c.Name]; ok {
			return m.regenerateHints(pod, c, blocks, req)
		}
	}
	return m.calculateHints(pod, req)
}

// podRequested is what a pod needs at once, by resource (upstream's sum
// for sidecars: app containers plus sidecars, or an init container plus
// the sidecars before it, whichever is more).
func podRequested(pod *v1.Pod) (map[v1.ResourceName]uint64, error) {
	initMax, sidecars := map[v1.ResourceName]uint64{}, map[v1.ResourceName]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req, err := requested(pod, c)
		if err != nil {
			return nil, err
		}
		for name, size := range req {
			if podspec.IsSidecar(c) {
				sidecars[name] += size
				continue
			}
			initMax[name] = max(initMax[name], sidecars[name]+size)
		}
	}
	apps := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.Containers {
		req, err := requested(pod, &pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, size := range req {
			apps[name] += size
		}
	}
	// Only resources some app container asks for count, as upstream.
	out := map[v1.ResourceName]uint64{}
	for name, size := range apps {
		out[name] = max(size+sidecars[name], initMax[name])
	}
	return out, nil
}

// regenerateHints are the hints of memory already allocated: the blocks'
// nodes, preferred, for each resource; nil when the blocks do not match
// the requests one for one.
func (m *Manager) regenerateHints(pod *v1.Pod, c *v1.Container, blocks []Block, req map[v1.ResourceName]uint64) map[string][]topologymanager.Hint {
	if len(blocks) != len(req) {
		m.log.Info("The number of requested resources by the container differs from the number of memory blocks", "pod", podName(pod), "containerName", c.Name)
		return nil
	}
	hints := map[string][]topologymanager.Hint{}
	for name := range req {
		hints[string(name)] = []topologymanager.Hint{}
	}
	for _, b := range blocks {
		size, ok := req[b.Type]
		if !ok || size != b.Size {
			m.log.Info("Memory already allocated with different numbers than requested", "pod", podName(pod), "containerName", c.Name, "type", b.Type, "requestedResource", size, "allocatedSize", b.Size)
			return nil
		}
		hints[string(b.Type)] = append(hints[string(b.Type)], topologymanager.Hint{NUMANodes: b.mask(), Preferred: true})
	}
	return hints
}

// calculateHints lists, for each requested resource, the NUMA masks that
// can take the request (mu held). See ContainerHints.
func (m *Manager) calculateHints(pod *v1.Pod, req map[v1.ResourceName]uint64) map[string][]topologymanager.Hint {
	ms := m.st.machine
	nodes := ms.nodes()
	names := slices.Sorted(maps.Keys(req))
	minSize := len(nodes)
	var masks []topologymanager.Mask
	topologymanager.IterateMasks(nodes, func(mask topologymanager.Mask) {
		ids := mask.Nodes()
		for _, name := range names {
			var alloc uint64
			for _, id := range ids {
				alloc += ms.table(id, name).Allocatable
			}
			if alloc < req[name] {
				return
			}
		}
		minSize = min(minSize, len(ids))
		if len(ids) == 1 && len(ms[ids[0]].Cells) > 1 {
			return
		}
		if len(ids) > 1 {
			for _, id := range ids {
				n := ms[id]
				if n.NumberOfAssignments > 0 && (len(n.Cells) == 1 || topologymanager.NewMask(n.Cells...) != mask) {
					return
				}
			}
		}
		for _, name := range names {
			var free uint64
			for _, id := range ids {
				free += ms.table(id, name).Free
			}
			if free+m.reusableOf(pod.UID, mask, name) < req[name] {
				return
			}
		}
		masks = append(masks, mask)
	})
	hints := map[string][]topologymanager.Hint{}
	if len(masks) == 0 {
		return hints
	}
	for _, name := range names {
		hs := make([]topologymanager.Hint, len(masks))
		for i, mask := range masks {
			hs[i] = topologymanager.Hint{NUMANodes: mask, Preferred: mask.Count() == minSize}
		}
		hints[string(name)] = hs
	}
	return hints
}
