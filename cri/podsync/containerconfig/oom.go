package containerconfig

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's OOM score adjustments of containers, by QoS class.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// OOMScoreAdj is the oom_score_adj a container runs with, as upstream's
// kubelet computes it: -997 for a Guaranteed pod's containers and for a
// node-critical pod's (priorityClassName system-node-critical), 1000 for a
// BestEffort pod's; a Burstable container's is 1000 less its share of the
// node's memory capacity in thousandths of its memory request, kept
// between 3 and 999 so that it dies after the BestEffort ones and before
// the Guaranteed ones. A sidecar's is no higher than the lowest of the
// pod's app containers', so that it outlives them.
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if podspec.IsCritical(pod) && pod.Spec.PriorityClassName == "system-node-critical" {
		return guaranteedOOMScoreAdj
	}
	switch podspec.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	score := func(request int64) int64 { return 1000 - 1000*request/memoryCapacity }
	request := c.Resources.Requests.Memory().Value()
	adj := score(request)
	if podspec.IsSidecar(c) {
		least := int64(-1)
		for i := range pod.Spec.Containers {
			r := pod.Spec.Containers[i].Resources.Requests.Memory().Value()
			if least < 0 || r < least {
				least = r
			}
		}
		if least > request {
			adj = min(adj, score(least))
		}
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}
