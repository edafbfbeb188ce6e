package admission

import (
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// NodeGetter returns the node pods are admitted to: its name, labels,
// taints and status.allocatable are read. An error refuses the pod with
// ReasonInvalidNodeInfo.
type NodeGetter interface {
	Node() (*v1.Node, error)
}

// NodeGetterFunc adapts a function to NodeGetter.
type NodeGetterFunc func() (*v1.Node, error)

// Node calls f.
func (f NodeGetterFunc) Node() (*v1.Node, error) { return f() }

// Preemptor stops a pod to make room for a critical one: upstream kubelet
// kills it with phase Failed, reason Preempting and a DisruptionTarget
// condition. It returns once the pod is stopped, or with an error.
type Preemptor interface {
	Preempt(victim, preemptor *v1.Pod) error
}

// PreemptorFunc adapts a function to Preemptor.
type PreemptorFunc func(victim, preemptor *v1.Pod) error

// Preempt calls f.
func (f PreemptorFunc) Preempt(victim, preemptor *v1.Pod) error { return f(victim, preemptor) }

var (
	_ NodeGetter = NodeGetterFunc(nil)
	_ Preemptor  = PreemptorFunc(nil)
	_ Handler    = (*Predicates)(nil)
)

// ErrMissingNode is wrapped by NewPredicates's error without a NodeGetter.
var ErrMissingNode = errors.New("admission: missing node getter")

// PredicateOptions configure NewPredicates.
type PredicateOptions struct {
	// Node is the node pods are admitted to. Required.
	Node NodeGetter
	// GOOS is the node's operating system. Empty means runtime.GOOS.
	GOOS string
	// Preemptor stops the pods a critical pod preempts. Nil means no
	// preemption: a critical pod lacking resources is refused as any
	// other (upstream kubelet always preempts).
	Preemptor Preemptor
	// Logger receives a line per preempted pod. Nil discards.
	Logger *slog.Logger
}

// Predicates is upstream's predicate admission handler: the pod's
// operating system, then the checks the scheduler made when it chose the
// node, made again because a kubelet may get pods no scheduler placed
// (static pods, pods bound by hand) or the node may have changed since.
type Predicates struct {
	o PredicateOptions
}

// NewPredicates returns the predicate handler.
func NewPredicates(o PredicateOptions) (*Predicates, error) {
	if o.Node == nil {
		return nil, fmt.Errorf("new predicates: %w", ErrMissingNode)
	}
	if o.GOOS == "" {
		o.GOOS = goos
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Predicates{o: o}, nil
}

// Failure is one predicate a pod fails: a lacking resource, or a named
// predicate (PredicateNodeAffinity ...) with its description.
type Failure struct {
	// Insufficient is set for a lacking resource.
	Insufficient *InsufficientResource
	// Predicate and Description are set otherwise.
	Predicate, Description string
}

// Reason and Message are the refusal's, as upstream writes them.
func (f Failure) Reason() string {
	if f.Insufficient != nil {
		return f.Insufficient.Reason()
	}
	return f.Predicate
}

// Message: see Reason.
func (f Failure) Message() string {
	if f.Insufficient != nil {
		return f.Insufficient.Message()
	}
	return fmt.Sprintf("Predicate %s failed: %s", f.Predicate, f.Description)
}

// Failures returns every predicate the pod fails on node beside the other
// pods, in upstream's order: each lacking resource (Fit), node affinity
// and nodeSelector, node name, host ports, then (for a pod that is not
// static) a NoExecute taint it does not tolerate.
func Failures(pod *v1.Pod, otherPods []*v1.Pod, node *v1.Node) []Failure {
	var out []Failure
	for _, r := range Fit(pod, otherPods, node.Status.Allocatable) {
		out = append(out, Failure{Insufficient: &r})
	}
	if !MatchesNodeAffinity(pod, node) {
		out = append(out, Failure{Predicate: PredicateNodeAffinity, Description: DescNodeAffinity})
	}
	if !MatchesNodeName(pod, node.Name) {
		out = append(out, Failure{Predicate: PredicateNodeName, Description: DescNodeName})
	}
	if !HostPortsFree(pod, otherPods) {
		out = append(out, Failure{Predicate: PredicateNodePorts, Description: DescNodePorts})
	}
	if !podspec.IsStatic(pod) {
		if _, untolerated := UntoleratedTaint(pod, node.Spec.Taints); untolerated {
			out = append(out, Failure{Predicate: PredicateTaintToleration, Description: DescTaintToleration})
		}
	}
	return out
}

// Admit refuses, in upstream's order: a kubernetes.io/os label naming
// another operating system than the node's
// (ReasonPodOSSelectorNodeLabelDoesNotMatch), spec.os naming another
// (ReasonPodOSNotSupported), then the first of the pod's Failures. A
// critical pod that fails only for lacking resources preempts instead:
// the other pods it may preempt (those not critical, or of a lower
// priority than its own) are chosen as upstream does, BestEffort first,
// then Burstable, then Guaranteed, fewest and smallest first, and stopped
// through the Preemptor; the pod is then admitted. When no such set of pods
// frees enough, the pod is refused with ReasonUnexpectedAdmissionError and
// upstream's message naming what is still lacking.
func (p *Predicates) Admit(pod *v1.Pod, otherPods []*v1.Pod) (ok bool, reason, message string) {
	node, err := p.o.Node.Node()
	if err != nil || node == nil {
		p.o.Logger.Warn("Cannot get the node to admit a pod", "err", err)
		return false, ReasonInvalidNodeInfo, MessageInvalidNodeInfo
	}
	if ok, reason, message = AdmitOS(pod, p.o.GOOS); !ok {
		return ok, reason, message
	}
	fails := Failures(pod, otherPods, node)
	if len(fails) == 0 {
		return true, "", ""
	}
	if p.o.Preemptor == nil || !podspec.IsCritical(pod) {
		return false, fails[0].Reason(), fails[0].Message()
	}
	var lacking []requirement
	for _, f := range fails {
		if f.Insufficient == nil {
			return false, f.Reason(), f.Message()
		}
		lacking = append(lacking, requirement{name: f.Insufficient.Name, quantity: f.Insufficient.shortfall()})
	}
	victims, err := podsToPreempt(pod, otherPods, lacking)
	if err != nil {
		return false, ReasonUnexpectedAdmissionError,
			"Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: " + err.Error()
	}
	for _, v := range victims {
		// As upstream, a pod that could not be stopped does not keep the
		// critical pod out.
		if err := p.o.Preemptor.Preempt(v, pod); err != nil {
			p.o.Logger.Warn("Cannot preempt a pod for a critical pod", "pod", v.Namespace+"/"+v.Name, "err", err)
			continue
		}
		p.o.Logger.Info("Preempted a pod for a critical pod", "pod", v.Namespace+"/"+v.Name, "critical", pod.Namespace+"/"+pod.Name)
	}
	return true, "", ""
}
