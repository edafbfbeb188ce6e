package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass returns the pod's quality of service class: the one in its status
// when set (it never changes), else computed as upstream does from the CPU
// and memory requests and limits of its containers and init containers (or
// of the pod, when the pod sets pod-level resources): Guaranteed when every
// container limits both and requests equal limits, BestEffort when nothing
// is requested or limited, Burstable otherwise.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(pod)
}

// ComputeQOSClass computes the QoS class from the pod's spec alone, for a
// pod whose status does not say it yet or may be stale (a resize request).
func ComputeQOSClass(pod *v1.Pod) v1.PodQOSClass {
	var req, lim [2]resource.Quantity // cpu, memory
	var hasReq, hasLim [2]bool
	guaranteed := true
	add := func(list v1.ResourceList, sum *[2]resource.Quantity, has *[2]bool) (found [2]bool) {
		for i, name := range [2]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			q, ok := list[name]
			if !ok || q.Sign() <= 0 {
				continue
			}
			if has[i] {
				sum[i].Add(q)
			} else {
				sum[i] = q.DeepCopy()
				has[i] = true
			}
			found[i] = true
		}
		return found
	}
	if r := pod.Spec.Resources; r != nil && hasCPUOrMemory(r) {
		add(r.Requests, &req, &hasReq)
		found := add(r.Limits, &lim, &hasLim)
		if !found[0] || !found[1] {
			guaranteed = false
		}
	} else {
		each := func(cs []v1.Container) {
			for i := range cs {
				add(cs[i].Resources.Requests, &req, &hasReq)
				found := add(cs[i].Resources.Limits, &lim, &hasLim)
				if !found[0] || !found[1] {
					guaranteed = false
				}
			}
		}
		each(pod.Spec.Containers)
		each(pod.Spec.InitContainers)
	}
	if !hasReq[0] && !hasReq[1] && !hasLim[0] && !hasLim[1] {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for i := range 2 {
			if hasReq[i] && (!hasLim[i] || lim[i].Cmp(req[i]) != 0) {
				guaranteed = false
			}
		}
	}
	if guaranteed && hasReq == hasLim {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func hasCPUOrMemory(r *v1.ResourceRequirements) bool {
	for _, l := range []v1.ResourceList{r.Requests, r.Limits} {
		if _, ok := l[v1.ResourceCPU]; ok {
			return true
		}
		if _, ok := l[v1.ResourceMemory]; ok {
			return true
		}
	}
	return false
}
