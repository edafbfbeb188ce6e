package admission

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// requirement is how much of a resource must be freed.
type requirement struct {
	name     v1.ResourceName
	quantity int64
}

type requirements []requirement

// minus returns what is still to be freed once pods are stopped.
func (rs requirements) minus(pods ...*v1.Pod) requirements {
	var out requirements
	for _, r := range rs {
		q := r.quantity
		for _, p := range pods {
			if q -= requestOf(p, r.name); q <= 0 {
				break
			}
		}
		if q > 0 {
			out = append(out, requirement{name: r.name, quantity: q})
		}
	}
	return out
}

// distance is how far stopping pod falls short of the requirements, each
// weighed as the square of the fraction left.
func (rs requirements) distance(pod *v1.Pod) float64 {
	var d float64
	for _, r := range rs {
		if left := float64(r.quantity - requestOf(pod, r.name)); left > 0 {
			f := left / float64(r.quantity)
			d += f * f
		}
	}
	return d
}

// String is upstream's spelling: "[(res: memory, q: 1024), ]".
func (rs requirements) String() string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range rs {
		fmt.Fprintf(&b, "(res: %s, q: %d), ", r.name, r.quantity)
	}
	b.WriteString("]")
	return b.String()
}

// preemptable reports whether preemptor may stop pod, as upstream: a
// critical pod may stop one that is not, and a pod may stop one of a lower
// priority when both have one.
func preemptable(preemptor, pod *v1.Pod) bool {
	if podspec.IsCritical(preemptor) && !podspec.IsCritical(pod) {
		return true
	}
	if preemptor.Spec.Priority != nil && pod.Spec.Priority != nil {
		return *preemptor.Spec.Priority > *pod.Spec.Priority
	}
	return false
}

// podsToPreempt chooses the pods to stop so that pod fits, as upstream's
// kubelet: the Guaranteed pods needed once every BestEffort and Burstable
// pod is counted, then the Burstable pods needed beside those, then the
// BestEffort ones; within a class, repeatedly the pod closest to what is
// left (the smaller request of memory, then cpu, on a tie).
func podsToPreempt(pod *v1.Pod, others []*v1.Pod, need requirements) ([]*v1.Pod, error) {
	var bestEffort, burstable, guaranteed []*v1.Pod
	for _, o := range others {
		if !preemptable(pod, o) {
			continue
		}
		switch podspec.QOSClass(o) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, o)
		case v1.PodQOSBurstable:
			burstable = append(burstable, o)
		case v1.PodQOSGuaranteed:
			guaranteed = append(guaranteed, o)
		}
	}
	all := append(append(append([]*v1.Pod{}, bestEffort...), burstable...), guaranteed...)
	if left := need.minus(all...); len(left) > 0 {
		return nil, errNoVictims(left)
	}
	g, err := closest(guaranteed, need.minus(append(append([]*v1.Pod{}, bestEffort...), burstable...)...))
	if err != nil {
		return nil, err
	}
	bu, err := closest(burstable, need.minus(append(append([]*v1.Pod{}, bestEffort...), g...)...))
	if err != nil {
		return nil, err
	}
	be, err := closest(bestEffort, need.minus(append(append([]*v1.Pod{}, bu...), g...)...))
	if err != nil {
		return nil, err
	}
	return append(append(be, bu...), g...), nil
}

func errNoVictims(left requirements) error {
	return errors.New("no set of running pods found to reclaim resources: " + left.String())
}

// closest picks pods, one at a time the one closest to what is left, until
// nothing is.
func closest(pods []*v1.Pod, need requirements) ([]*v1.Pod, error) {
	pods = append([]*v1.Pod(nil), pods...)
	var out []*v1.Pod
	for len(need) > 0 {
		if len(pods) == 0 {
			return nil, errNoVictims(need)
		}
		best, bestDist := 0, float64(len(need)+1)
		for i, p := range pods {
			d := need.distance(p)
			if d < bestDist || (d == bestDist && smallerRequest(p, pods[best])) {
				best, bestDist = i, d
			}
		}
		need = need.minus(pods[best])
		out = append(out, pods[best])
		pods[best] = pods[len(pods)-1]
		pods = pods[:len(pods)-1]
	}
	return out, nil
}

// smallerRequest orders pods by their memory request, then their cpu
// request; equal pods count as smaller, as upstream's.
func smallerRequest(a, b *v1.Pod) bool {
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		ra, rb := requestOf(a, name), requestOf(b, name)
		if ra != rb {
			return ra < rb
		}
	}
	return true
}
