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
// In a pod with a pod-level memory request, what of it no container
// requests is shared out evenly among all its containers and counts in
// each one's request (and in the app containers' a sidecar is held to).
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
	// A pod-level memory request not given to any container is shared
	// out evenly among them all, init containers too, as upstream's.
	var share int64
	if podspec.HasPodLevelRequests(pod) {
		if q := pod.Spec.Resources.Requests.Memory(); !q.IsZero() {
			given := podspec.EffectiveResources(pod, podspec.ContainerRequests, nil)
			share = (q.Value() - given.Memory().Value()) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
		}
	}
	request := c.Resources.Requests.Memory().Value() + share
	adj := score(request)
	if podspec.IsSidecar(c) && len(pod.Spec.Containers) > 0 {
		least := int64(-1)
		for i := range pod.Spec.Containers {
			r := pod.Spec.Containers[i].Resources.Requests.Memory().Value()
			if least < 0 || r < least {
				least = r
			}
		}
		least += share
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
