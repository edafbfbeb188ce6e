package admission

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// InsufficientResource is a resource the node lacks for a pod: the pod
// requests Requested, the other pods Used, and the node's allocatable is
// Capacity (millicores for cpu, bytes for memory and storage, a count for
// the others).
type InsufficientResource struct {
	Name                      v1.ResourceName
	Requested, Used, Capacity int64
}

// Reason is the refusal's reason: ReasonOutOfMemory and the like.
func (r InsufficientResource) Reason() string { return InsufficientResourcePrefix + string(r.Name) }

// Message is the refusal's message, upstream's: "Node didn't have enough
// resource: memory, requested: 1024, used: 0, capacity: 512".
func (r InsufficientResource) Message() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		r.Name, r.Requested, r.Used, r.Capacity)
}

// shortfall is how much more the pod needs than the node has left.
func (r InsufficientResource) shortfall() int64 { return r.Requested - (r.Capacity - r.Used) }

// Fit returns every resource that a node with the given allocatable lacks
// for pod, the other pods' requests counted, in upstream's order: pods
// (one more than allocatable pods is too many), cpu, memory,
// ephemeral-storage, then hugepages, extended and other scalar resources
// sorted by name (upstream's order among those is a map's). A resource the
// pod does not request (or requests zero of) never lacks. As upstream's
// kubelet, a pod's request of an extended resource (example.com/gpu) that
// the node does not list at all is left out (it may be a cluster-level
// resource); one the node lists with zero left is lacking. An empty result
// means the pod fits.
func Fit(pod *v1.Pod, otherPods []*v1.Pod, allocatable v1.ResourceList) []InsufficientResource {
	var out []InsufficientResource
	allowed := allocatable.Pods().Value()
	if int64(len(otherPods))+1 > allowed {
		out = append(out, InsufficientResource{Name: v1.ResourcePods, Requested: 1, Used: int64(len(otherPods)), Capacity: allowed})
	}
	want := amounts(podspec.Requests(withoutMissingExtended(pod, allocatable)))
	if len(want) == 0 {
		return out
	}
	used := map[v1.ResourceName]int64{}
	for _, p := range otherPods {
		for name, v := range amounts(podspec.Requests(p)) {
			used[name] += v
		}
	}
	have := amounts(allocatable)
	names := make([]v1.ResourceName, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b v1.ResourceName) int {
		if c := fitOrder(a) - fitOrder(b); c != 0 {
			return c
		}
		return strings.Compare(string(a), string(b))
	})
	for _, name := range names {
		if w := want[name]; w > 0 && w > have[name]-used[name] {
			out = append(out, InsufficientResource{Name: name, Requested: w, Used: used[name], Capacity: have[name]})
		}
	}
	return out
}

func fitOrder(name v1.ResourceName) int {
	switch name {
	case v1.ResourceCPU:
		return 0
	case v1.ResourceMemory:
		return 1
	case v1.ResourceEphemeralStorage:
		return 2
	}
	return 3
}

// amounts turns a resource list into the integers Fit compares:
// millicores of cpu, the value of memory, ephemeral-storage and the scalar
// resources; pods and resources the scheduler does not count are left
// out.
func amounts(list v1.ResourceList) map[v1.ResourceName]int64 {
	out := make(map[v1.ResourceName]int64, len(list))
	for name, q := range list {
		switch {
		case name == v1.ResourceCPU:
			out[name] = q.MilliValue()
		case name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage || isScalar(name):
			out[name] = q.Value()
		}
	}
	return out
}

// isScalar: the resources beyond cpu, memory and ephemeral-storage that the
// scheduler counts: hugepages, extended resources, resources under a
// kubernetes.io/ domain and attachable volumes.
func isScalar(name v1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) ||
		strings.Contains(s, "/")
}

// isExtended: a resource named outside the kubernetes.io domain, as
// upstream's IsExtendedResourceName.
func isExtended(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// withoutMissingExtended returns pod, or a copy whose containers do not
// request the extended resources the node does not list.
func withoutMissingExtended(pod *v1.Pod, allocatable v1.ResourceList) *v1.Pod {
	missing := func(cs []v1.Container) bool {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if _, ok := allocatable[name]; !ok && isExtended(name) {
					return true
				}
			}
		}
		return false
	}
	if !missing(pod.Spec.Containers) && !missing(pod.Spec.InitContainers) {
		return pod
	}
	cp := pod.DeepCopy()
	for _, cs := range [][]v1.Container{cp.Spec.Containers, cp.Spec.InitContainers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if _, ok := allocatable[name]; !ok && isExtended(name) {
					delete(cs[i].Resources.Requests, name)
				}
			}
		}
	}
	return cp
}

// requestOf is how much of one resource a pod asks for, as upstream's
// preemption counts it: its effective requests without overhead, plus the
// overhead when that is not zero; one for pods.
func requestOf(pod *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	q, ok := podspec.Requests(withoutOverhead(pod))[name]
	if !ok {
		q = resource.Quantity{}
	}
	if o, ok := pod.Spec.Overhead[name]; ok && !q.IsZero() {
		q.Add(o)
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func withoutOverhead(pod *v1.Pod) *v1.Pod {
	if pod.Spec.Overhead == nil {
		return pod
	}
	cp := *pod
	cp.Spec.Overhead = nil
	return &cp
}
