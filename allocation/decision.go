package allocation

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Outcome is what the node does with a resize.
type Outcome int

const (
	// Admit: the new resources are allocated, and the runtime is asked to
	// apply them at the pod's next sync.
	Admit Outcome = iota
	// Defer: the resize does not fit beside the other pods now; it is
	// retried when room may have come (PodResizePending, reason
	// Deferred).
	Defer
	// Infeasible: the node will never take the resize (PodResizePending,
	// reason Infeasible).
	Infeasible
)

// Reason is the PodResizePending reason of the outcome, upstream's:
// v1.PodReasonDeferred, v1.PodReasonInfeasible, or "" for Admit.
func (o Outcome) Reason() string {
	switch o {
	case Defer:
		return v1.PodReasonDeferred
	case Infeasible:
		return v1.PodReasonInfeasible
	}
	return ""
}

// String is "Admit", "Defer" or "Infeasible".
func (o Outcome) String() string {
	switch o {
	case Admit:
		return "Admit"
	case Defer:
		return "Defer"
	case Infeasible:
		return "Infeasible"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Decision is the node's answer to a resize: its outcome and, unless it is
// admitted, upstream's message for the pod's PodResizePending condition.
type Decision struct {
	Outcome Outcome
	Message string
}

// String is the outcome, then the message if there is one.
func (d Decision) String() string {
	if d.Message == "" {
		return d.Outcome.String()
	}
	return d.Outcome.String() + ": " + d.Message
}

// staticRefusal is the decision on a static pod's resize, which upstream
// never takes; ok is false for any other pod.
func staticRefusal(pod *v1.Pod) (Decision, bool) {
	if podspec.IsStatic(pod) {
		return Decision{Outcome: Infeasible, Message: MessageStaticPod}, true
	}
	return Decision{}, false
}

// AdmitResize weighs pod's resize as upstream's allocation manager does:
// Infeasible for a static pod, or for CPU or memory requests beyond the
// node's allocatable (memory named first, with MessageCapacityPrefix);
// Defer when the pod's new requests do not fit beside others' (admission's
// resource fit, whose first shortage is the message); Admit otherwise.
// pod is the pod as its spec asks; others are the other pods as allocated
// (Manager.AllocatedPod). It is pure: it reads its arguments and modifies
// none.
func AdmitResize(pod *v1.Pod, allocatable v1.ResourceList, others []*v1.Pod) Decision {
	if d, ok := staticRefusal(pod); ok {
		return d
	}
	reqs := podspec.Requests(pod)
	if m, ok := allocatable[v1.ResourceMemory]; ok && reqs.Memory().Value() > m.Value() {
		return Decision{Outcome: Infeasible, Message: fmt.Sprintf("%smemory, requested: %d, capacity: %d",
			MessageCapacityPrefix, reqs.Memory().Value(), m.Value())}
	}
	if c, ok := allocatable[v1.ResourceCPU]; ok && reqs.Cpu().MilliValue() > c.MilliValue() {
		return Decision{Outcome: Infeasible, Message: fmt.Sprintf("%scpu, requested: %d, capacity: %d",
			MessageCapacityPrefix, reqs.Cpu().MilliValue(), c.MilliValue())}
	}
	if short := admission.Fit(pod, others, allocatable); len(short) > 0 {
		return Decision{Outcome: Defer, Message: short[0].Message()}
	}
	return Decision{Outcome: Admit}
}

// retryCandidate is a pod whose deferred resize is retried, with what
// orders it.
type retryCandidate struct {
	pod   *v1.Pod
	grows bool      // asks more CPU or memory than it was allocated
	since time.Time // PodResizePending's transition time
}

// retryOrder sorts the deferred resizes as upstream retries them: those
// that ask no more CPU or memory first, then by priority, Guaranteed pods
// before the rest, and the longest waiting first. The sort is stable.
func retryOrder(cs []retryCandidate) {
	slices.SortStableFunc(cs, func(x, y retryCandidate) int {
		if x.grows != y.grows {
			if !x.grows {
				return -1
			}
			return 1
		}
		if px, py := priority(x.pod), priority(y.pod); px != py {
			if px > py {
				return -1
			}
			return 1
		}
		gx := podspec.QOSClass(x.pod) == v1.PodQOSGuaranteed
		if gy := podspec.QOSClass(y.pod) == v1.PodQOSGuaranteed; gx != gy {
			if gx {
				return -1
			}
			return 1
		}
		return x.since.Compare(y.since)
	})
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// grows says whether pod asks more CPU or memory than allocated, the pod as
// allocated.
func grows(pod, allocated *v1.Pod) bool {
	now, was := podspec.Requests(pod), podspec.Requests(allocated)
	return now.Cpu().Cmp(*was.Cpu()) > 0 || now.Memory().Cmp(*was.Memory()) > 0
}
