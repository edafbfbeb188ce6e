package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Requests returns what a pod requests of the node, as upstream computes a
// pod's effective requests: the sum of its regular containers' and its
// restartable init containers' (sidecars') requests, or for each resource
// the largest need of an init container (its own requests plus those of the
// sidecars started before it) when that is more; then the pod-level
// requests of cpu, memory and hugepages in place of the containers' where
// the pod sets them; then the pod's overhead added. Admission fits it
// against the node's allocatable.
func Requests(pod *v1.Pod) v1.ResourceList {
	reqs := EffectiveResources(pod, ContainerRequests, nil)
	if r := pod.Spec.Resources; r != nil && podLevelSet(r.Requests) {
		for name, q := range r.Requests {
			if IsPodLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	addResources(reqs, pod.Spec.Overhead)
	return reqs
}

// Limits returns a pod's limits as upstream's resource helper sums them
// (PodLimits): its containers' limits summed as Requests sums requests,
// then the pod-level limits of cpu, memory and hugepages in place of the
// containers' where the pod has pod-level resources, then the pod's
// overhead added to each limit that is set and not zero. The pod's status
// reports it among its pod-level resources.
func Limits(pod *v1.Pod) v1.ResourceList {
	lims := EffectiveResources(pod, ContainerLimits, nil)
	if HasPodLevelResources(pod) {
		for name, q := range pod.Spec.Resources.Limits {
			if IsPodLevelResource(name) {
				lims[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		if cur, ok := lims[name]; ok && !cur.IsZero() {
			cur.Add(q)
			lims[name] = cur
		}
	}
	return lims
}

// podLevelSet reports whether list names a resource a pod may set for
// itself as a whole.
func podLevelSet(list v1.ResourceList) bool {
	for name := range list {
		if IsPodLevelResource(name) {
			return true
		}
	}
	return false
}

// EffectiveResources sums what pick takes of each container's resources: the
// regular containers' and the sidecars', or for each resource the largest
// need of an init container (its own plus the sidecars started before it)
// when that is more. each, when not nil, sees each regular container's list
// and each init container's need. Pod-level resources and overhead are the
// caller's.
func EffectiveResources(pod *v1.Pod, pick func(*v1.ResourceRequirements) v1.ResourceList, each func(v1.ResourceList)) v1.ResourceList {
	sum := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		l := pick(&pod.Spec.Containers[i].Resources)
		if each != nil {
			each(l)
		}
		addResources(sum, l)
	}
	sidecars, initMax := v1.ResourceList{}, v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var need v1.ResourceList
		if IsSidecar(c) {
			addResources(sum, pick(&c.Resources))
			addResources(sidecars, pick(&c.Resources))
			need = sidecars
		} else {
			need = v1.ResourceList{}
			addResources(need, pick(&c.Resources))
			addResources(need, sidecars)
		}
		if each != nil {
			each(need)
		}
		maxResources(initMax, need)
	}
	maxResources(sum, initMax)
	return sum
}

// ContainerRequests picks a container's requests, for EffectiveResources.
func ContainerRequests(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }

// ContainerLimits picks a container's limits, for EffectiveResources.
func ContainerLimits(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }

// HasPodLevelResources reports whether the pod sets, for itself as a whole
// (spec.resources), a request or a limit a pod may set (IsPodLevelResource):
// upstream's IsPodLevelResourcesSet. Such a pod's limits reach its
// containers that set none, and its requests its containers' OOM score.
func HasPodLevelResources(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && (hasPodLevel(r.Requests) || hasPodLevel(r.Limits))
}

// HasPodLevelRequests is HasPodLevelResources for requests alone
// (upstream's IsPodLevelRequestsSet).
func HasPodLevelRequests(pod *v1.Pod) bool {
	return pod.Spec.Resources != nil && hasPodLevel(pod.Spec.Resources.Requests)
}

func hasPodLevel(l v1.ResourceList) bool {
	for name := range l {
		if IsPodLevelResource(name) {
			return true
		}
	}
	return false
}

// IsPodLevelResource reports whether a pod may set name for itself as a
// whole (spec.resources): cpu, memory and hugepages.
func IsPodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// addResources adds each quantity of from to into's.
func addResources(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; ok {
			cur.Add(q)
			into[name] = cur
		} else {
			into[name] = q.DeepCopy()
		}
	}
}

// maxResources raises each quantity of into to from's where from's is
// more.
func maxResources(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

// DownwardAPILimits is what a container's unset (or zero) limits.cpu,
// limits.memory and limits.ephemeral-storage read as through the
// downward API, as upstream's kubelet defaults them: the node's
// allocatable, with the pod's own limit of cpu or memory in its place when
// the pod sets one (spec.resources, PodLevelResources; ephemeral storage
// is no pod-level resource). Only resources allocatable lists are
// defaulted. allocatable is not modified; the result may be it.
func DownwardAPILimits(pod *v1.Pod, allocatable v1.ResourceList) v1.ResourceList {
	if pod.Spec.Resources == nil || !hasPodLevel(pod.Spec.Resources.Limits) {
		return allocatable
	}
	out := allocatable.DeepCopy()
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		q, set := pod.Spec.Resources.Limits[name]
		if _, known := out[name]; set && known && !q.IsZero() && IsPodLevelResource(name) {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// DownwardAPILimit is the limit of resource name that container c reads
// through the downward API: its own when set and not zero, else
// DownwardAPILimits' default; ok is false when neither has one.
func DownwardAPILimit(pod *v1.Pod, c *v1.Container, name v1.ResourceName, allocatable v1.ResourceList) (q resource.Quantity, ok bool) {
	if q, ok = c.Resources.Limits[name]; ok && !q.IsZero() {
		return q, true
	}
	q, ok = DownwardAPILimits(pod, allocatable)[name]
	return q, ok
}
