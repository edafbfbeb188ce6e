package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The message fragments, as upstream's, trailing spaces included.
const (
	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

func qty(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// evictionMessage says why a pod is evicted: the starved resource, the
// threshold and what is available, and each container using more of the
// resource than it requests.
func evictionMessage(res v1.ResourceName, pod *v1.Pod, statsFn StatsFunc, met []Threshold, obs Observations) string {
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowMessageFmt, res)
	for _, t := range met {
		if signalInfo[t.Signal].resource != res {
			continue
		}
		if q, ok := t.quantity(obs); ok {
			quantity := qty(q)
			if t.Value.Quantity != nil { // as written, as upstream prints it
				quantity = t.Value.Quantity.String()
			}
			fmt.Fprintf(&b, thresholdMetMessageFmt, quantity, qty(obs[t.Signal].Available))
			break
		}
	}
	ps, ok := statsFn(pod)
	if !ok {
		return b.String()
	}
	for _, cs := range ps.Containers {
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Logs != nil {
					usage = resource.NewQuantity(int64(cs.Rootfs.UsedBytes+cs.Logs.UsedBytes), resource.BinarySI)
				}
			case v1.ResourceMemory:
				if cs.Memory != nil {
					usage = resource.NewQuantity(int64(cs.Memory.WorkingSetBytes), resource.BinarySI)
				}
			}
			if usage != nil && usage.Cmp(req) > 0 {
				fmt.Fprintf(&b, containerMessageFmt, c.Name, usage.String(), req.String(), res)
			}
		}
	}
	return b.String()
}
