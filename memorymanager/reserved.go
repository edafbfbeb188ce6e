package memorymanager

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// isMemoryResource reports whether the memory manager tracks r: memory and
// hugepages-<size>.
func isMemoryResource(r v1.ResourceName) bool {
	if r == v1.ResourceMemory {
		return true
	}
	_, ok := podspec.HugePageSize(r)
	return ok
}

// nodeAllocatableReservation is upstream's GetNodeAllocatableReservation
// for the memory resources the machine has: systemReserved + kubeReserved
// (+ the hard eviction threshold, for memory), resources that add up to
// zero left out.
func (o *Options) nodeAllocatableReservation(m *Machine) v1.ResourceList {
	out := v1.ResourceList{}
	for name := range m.resourceNames() {
		v := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := o.SystemReserved[name]; ok {
			v.Add(q)
		}
		if q, ok := o.KubeReserved[name]; ok {
			v.Add(q)
		}
		if name == v1.ResourceMemory {
			v.Add(o.EvictionHardMemory)
		}
		if !v.IsZero() {
			out[name] = *v
		}
	}
	return out
}

// reservedByNode checks reservedMemory as upstream does when the static
// policy starts, and returns it by NUMA node and resource, in bytes. Every
// node named must exist, and for every memory resource the reservations
// across nodes must add up to the node allocatable reservation.
func reservedByNode(m *Machine, reservation v1.ResourceList, reservedMemory []kubeletconfig.MemoryReservation) (map[int]map[v1.ResourceName]uint64, error) {
	exists := map[int]bool{}
	for _, id := range m.NUMANodes() {
		exists[id] = true
	}
	totals := map[v1.ResourceName]resource.Quantity{}
	for _, r := range reservedMemory {
		if !exists[int(r.NumaNode)] {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NumaNode)
		}
		for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
			q := r.Limits[name].DeepCopy()
			if sum, ok := totals[name]; ok {
				q.Add(sum)
			}
			totals[name] = q
		}
	}
	names := map[v1.ResourceName]bool{}
	for name := range totals {
		names[name] = true
	}
	for name := range reservation {
		if isMemoryResource(name) {
			names[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		want := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := reservation[name]; ok {
			want.Add(q)
		}
		got := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := totals[name]; ok {
			got.Add(q)
		}
		if !want.Equal(*got) {
			return nil, fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", got.String(), name, want.String())
		}
	}
	out := map[int]map[v1.ResourceName]uint64{}
	for _, id := range m.NUMANodes() {
		out[id] = map[v1.ResourceName]uint64{}
	}
	for _, r := range reservedMemory {
		for name, q := range r.Limits {
			v, ok := q.AsInt64()
			if !ok {
				return nil, fmt.Errorf("could not covert a variable of type Quantity to int64")
			}
			out[int(r.NumaNode)][name] = uint64(v)
		}
	}
	var memory uint64
	for _, rs := range out {
		memory += rs[v1.ResourceMemory]
	}
	if memory == 0 {
		return nil, fmt.Errorf("[memorymanager] you should specify the system reserved memory")
	}
	// Upstream subtracts without checking; a reservation larger than the
	// node would wrap around.
	for _, n := range m.nodes {
		var huge uint64
		for _, h := range n.HugePages {
			huge += h.Total()
			if r := out[n.ID][h.ResourceName()]; r > h.Total() {
				return nil, fmt.Errorf("the reserved memory %d of type %q on NUMA node %d exceeds its %d bytes", r, h.ResourceName(), n.ID, h.Total())
			}
		}
		if r := out[n.ID][v1.ResourceMemory]; r > n.Memory-huge {
			return nil, fmt.Errorf("the reserved memory %d of type %q on NUMA node %d exceeds its %d bytes outside huge pages", r, v1.ResourceMemory, n.ID, n.Memory-huge)
		}
	}
	return out, nil
}
