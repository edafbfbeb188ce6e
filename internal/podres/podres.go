package podres

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Effective sums what pick takes of each container's resources: the
// regular containers' and the sidecars', or for each resource the largest
// need of an init container (its own plus the sidecars started before it)
// when that is more. each, when not nil, sees each regular container's list
// and each init container's need. Pod-level resources and overhead are the
// caller's.
func Effective(pod *v1.Pod, pick func(*v1.ResourceRequirements) v1.ResourceList, each func(v1.ResourceList)) v1.ResourceList {
	sum := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		l := pick(&pod.Spec.Containers[i].Resources)
		if each != nil {
			each(l)
		}
		Add(sum, l)
	}
	sidecars, initMax := v1.ResourceList{}, v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var need v1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			Add(sum, pick(&c.Resources))
			Add(sidecars, pick(&c.Resources))
			need = sidecars
		} else {
			need = v1.ResourceList{}
			Add(need, pick(&c.Resources))
			Add(need, sidecars)
		}
		if each != nil {
			each(need)
		}
		Max(initMax, need)
	}
	Max(sum, initMax)
	return sum
}

// Requests picks a container's requests, for Effective.
func Requests(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }

// Limits picks a container's limits, for Effective.
func Limits(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }

// PodLevel reports whether a pod may set name for itself as a whole
// (spec.resources): cpu, memory and hugepages.
func PodLevel(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// Add adds each quantity of from to into's.
func Add(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; ok {
			cur.Add(q)
			into[name] = cur
		} else {
			into[name] = q.DeepCopy()
		}
	}
}

// Max raises each quantity of into to from's where from's is more.
func Max(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}
