package devices

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

var _ topologymanager.HintProvider = (*Manager)(nil)

// ContainerHints are the NUMA affinities the container's devices could
// come from, for the topology manager, as upstream's device manager hints
// them. For each device plugin resource in the container's limits:
//
//   - no hint (nil: any node) when none of the resource's devices was
//     listed with a NUMA node;
//   - when the container holds devices of the resource already (a restart),
//     the sets of nodes that hold them, or an empty list (cannot be
//     satisfied) when it holds another number than it asks for;
//   - otherwise an empty list when fewer devices are free (healthy and held
//     by no container) than asked for, counting those a regular init
//     container of the pod left for reuse; else every set of NUMA nodes
//     (topologymanager.IterateMasks) whose free devices number enough,
//     which holds every reusable device that has a node.
//
// A device counts for a set of nodes when any of its nodes is in the set;
// a free device without a node counts for none. A hint is preferred when
// its set is as small as the smallest set that holds enough of the
// resource's devices, free or not. A manager without Options.NUMANodes
// gives no hints.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.o.NUMANodes) == 0 {
		return nil
	}
	var out map[string][]topologymanager.Hint
	for name, q := range c.Resources.Limits {
		res := string(name)
		if !m.isDeviceResource(res) {
			continue
		}
		var held []string
		if a := m.pods.get(pod.UID, c.Name, res); a != nil {
			held = a.ids
		}
		var reusable []string
		if m.reusePod == pod.UID {
			reusable = sortedKeys(m.reuse[res])
		}
		if out == nil {
			out = map[string][]topologymanager.Hint{}
		}
		out[res] = m.resourceHints(res, int(q.Value()), held, reusable)
	}
	return out
}

// PodHints are ContainerHints for the whole pod (topology manager scope
// pod): for each device resource, the pod's effective limit (its app
// containers' and sidecars', or its largest init container's need when
// more), from the devices any of its containers holds when it holds some,
// else from the free ones; nothing is reused.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	limits := podspec.EffectiveResources(pod, podspec.ContainerLimits, nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.o.NUMANodes) == 0 {
		return nil
	}
	var out map[string][]topologymanager.Hint
	for name, q := range limits {
		res := string(name)
		if !m.isDeviceResource(res) {
			continue
		}
		var held []string
		for _, byRes := range m.pods[pod.UID] {
			if a := byRes[res]; a != nil {
				for _, id := range a.ids {
					if !slices.Contains(held, id) {
						held = append(held, id)
					}
				}
			}
		}
		if out == nil {
			out = map[string][]topologymanager.Hint{}
		}
		out[res] = m.resourceHints(res, int(q.Value()), held, nil)
	}
	return out
}

// resourceHints are the hints of requested devices of res (mu held); see
// ContainerHints.
func (m *Manager) resourceHints(res string, requested int, held, reusable []string) []topologymanager.Hint {
	r := m.resources[res]
	if r == nil || len(r.numa) == 0 {
		return nil // no device has a NUMA node: no preference
	}
	if len(held) > 0 {
		if len(held) != requested {
			m.log.Debug("Resource already allocated to pod with different number than request", "resource", res, "request", requested, "allocated", len(held))
			return []topologymanager.Hint{}
		}
		return deviceHints(m.o.NUMANodes, r.numa, held, nil, requested)
	}
	available := m.available(res, r)
	free := len(available)
	for _, id := range reusable {
		if !slices.Contains(available, id) {
			free++
		}
	}
	if free < requested {
		m.log.Debug("Unable to generate topology hints: requested number of devices unavailable", "resource", res, "request", requested, "available", free)
		return []topologymanager.Hint{}
	}
	return deviceHints(m.o.NUMANodes, r.numa, available, reusable, requested)
}

// available are the healthy devices of res no container holds, sorted (mu
// held).
func (m *Manager) available(res string, r *resourceState) []string {
	used := m.pods.inUse(res)
	var out []string
	for id := range r.health {
		if _, held := used[id]; !held && r.healthy(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// deviceHints is upstream's hint generation for request devices of one
// resource over the machine's NUMA nodes: numa are the nodes of every
// listed device that has some, available the devices that can be taken and
// reusable those set aside for the container. A mask is a hint when every
// reusable device with a node has one in it and the reusable devices with
// a node plus the available devices with a node in the mask number at
// least request; it is preferred when no smaller mask holds request of the
// listed devices, free or not. The result is never nil: empty means the
// request cannot be satisfied.
func deviceHints(nodes []int, numa map[string][]int, available, reusable []string, request int) []topologymanager.Hint {
	return topologymanager.MinimalHints(nodes, func(mask topologymanager.Mask) (free, could bool) {
		all := 0
		for _, ns := range numa {
			if anyIn(mask, ns) {
				all++
			}
		}
		matching := 0
		for _, id := range reusable {
			ns := numa[id]
			if len(ns) == 0 {
				continue
			}
			if !anyIn(mask, ns) {
				return false, all >= request
			}
			matching++
		}
		for _, id := range available {
			if anyIn(mask, numa[id]) {
				matching++
			}
		}
		return matching >= request, all >= request
	})
}

// anyIn reports whether any of nodes is in mask.
func anyIn(mask topologymanager.Mask, nodes []int) bool {
	for _, n := range nodes {
		if mask.IsSet(n) {
			return true
		}
	}
	return false
}

// NUMANodes returns the NUMA nodes of a device as its plugin last listed
// them or, before its plugin lists it again after a restart, as they were
// when a container got it; nil when there are none or the device is
// unknown.
func (m *Manager) NUMANodes(resource, id string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.numaNodes(resource, id))
}

// numaNodes is NUMANodes with mu held; the result is not a copy.
func (m *Manager) numaNodes(resource, id string) []int {
	if r := m.resources[resource]; r != nil {
		if ns, ok := r.numa[id]; ok {
			return ns
		}
		if r.numa != nil {
			return nil // listed since the restart, without a node
		}
	}
	for _, containers := range m.pods {
		for _, byRes := range containers {
			if a := byRes[resource]; a != nil {
				if ns, ok := a.numa[id]; ok {
					return ns
				}
			}
		}
	}
	return nil
}
