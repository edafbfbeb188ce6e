package devices

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

var _ topologymanager.HintProvider = (*Manager)(nil)

// ContainerHints are the NUMA affinities of the devices a container holds,
// for the topology manager: for each of its device resources, every set of
// NUMA nodes that holds all of them, preferred when no smaller set of nodes
// has as many healthy devices of the resource. The manager allocates
// devices at admission (Admit) before the topology manager runs, so the
// hints describe what the container got, as upstream's hints describe a
// container whose devices are already allocated; the CPU and memory
// managers then align with the devices. A resource one of whose devices
// has no NUMA node gives no hint (nil), as upstream's.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := map[string][]string{}
	for res, a := range m.pods[pod.UID][c.Name] {
		held[res] = a.ids
	}
	return m.hints(held)
}

// PodHints are ContainerHints for every device the pod's containers hold.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := map[string][]string{}
	for _, byRes := range m.pods[pod.UID] {
		for res, a := range byRes {
			for _, id := range a.ids {
				if !slices.Contains(held[res], id) {
					held[res] = append(held[res], id)
				}
			}
		}
	}
	return m.hints(held)
}

// Allocate is a no-op: Admit has allocated the pod's devices already.
func (m *Manager) Allocate(*v1.Pod, *v1.Container) error { return nil }

// hints computes the hints of held devices by resource (mu held).
func (m *Manager) hints(held map[string][]string) map[string][]topologymanager.Hint {
	if len(m.o.NUMANodes) == 0 || len(held) == 0 {
		return nil
	}
	out := map[string][]topologymanager.Hint{}
	for res, ids := range held {
		r := m.resources[res]
		if r == nil || len(ids) == 0 {
			continue
		}
		aligned := true
		for _, id := range ids {
			aligned = aligned && len(r.numa[id]) > 0
		}
		if !aligned {
			out[res] = nil
			continue
		}
		var healthy []string
		for id := range r.health {
			if r.healthy(id) {
				healthy = append(healthy, id)
			}
		}
		out[res] = topologymanager.MinimalHints(m.o.NUMANodes, func(mask topologymanager.Mask) (bool, bool) {
			return countIn(r, ids, mask) == len(ids), countIn(r, healthy, mask) >= len(ids)
		})
	}
	return out
}

// countIn counts the devices all of whose NUMA nodes are in mask.
func countIn(r *resourceState, ids []string, mask topologymanager.Mask) int {
	n := 0
	for _, id := range ids {
		nodes := r.numa[id]
		in := len(nodes) > 0
		for _, node := range nodes {
			in = in && mask.IsSet(node)
		}
		if in {
			n++
		}
	}
	return n
}

// NUMANodes returns the NUMA nodes of a device as its plugin listed them;
// nil when it listed none or the device is unknown.
func (m *Manager) NUMANodes(resource, id string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.resources[resource]; r != nil {
		return slices.Clone(r.numa[id])
	}
	return nil
}
