package eviction

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HardReservation returns what the hard thresholds keep out of the node's
// allocatable resources, as upstream's node allocatable: a
// memory.available threshold reserves its amount of memory and a
// nodefs.available threshold its amount of ephemeral-storage, a percentage
// taken of the resource's capacity. Soft thresholds and other signals
// reserve nothing; nil when nothing is reserved.
func HardReservation(thresholds []Threshold, capacity v1.ResourceList) v1.ResourceList {
	var out v1.ResourceList
	for _, t := range thresholds {
		if !t.IsHard() || t.Operator != OpLessThan {
			continue
		}
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		var q resource.Quantity
		if t.Value.Quantity != nil {
			q = t.Value.Quantity.DeepCopy()
		} else {
			c := capacity[name]
			q = *resource.NewQuantity(int64(float64(c.Value())*float64(t.Value.Percentage)), resource.BinarySI)
		}
		if out == nil {
			out = v1.ResourceList{}
		}
		out[name] = q
	}
	return out
}
