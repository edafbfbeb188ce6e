package admission

import (
	v1 "k8s.io/api/core/v1"
)

// Handler decides whether a pod may run on the node, knowing the other pods
// the node has admitted and not yet seen terminate. It returns ok, or the
// reason and message of a refusal as upstream kubelet writes them into the
// pod's status (reason "OutOfmemory", message "Node didn't have enough
// resource: memory, requested: ...").
//
// A Handler must not modify its arguments and must be safe for concurrent
// use if its caller admits pods concurrently (the agent does not).
type Handler interface {
	Admit(pod *v1.Pod, otherPods []*v1.Pod) (ok bool, reason, message string)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(pod *v1.Pod, otherPods []*v1.Pod) (ok bool, reason, message string)

// Admit calls f.
func (f HandlerFunc) Admit(pod *v1.Pod, otherPods []*v1.Pod) (ok bool, reason, message string) {
	return f(pod, otherPods)
}

// PodHandlerFunc adapts a check that needs only the pod, such as the
// eviction manager's Admit, to Handler.
type PodHandlerFunc func(pod *v1.Pod) (ok bool, reason, message string)

// Admit calls f with the pod.
func (f PodHandlerFunc) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	return f(pod)
}

// Chain is a list of handlers asked in order, upstream's pod admit
// handlers: the first refusal is the chain's, and the pod is admitted when
// every handler admits it. Nil handlers are skipped; an empty chain admits
// every pod.
type Chain []Handler

// Admit asks each handler in turn and returns the first refusal.
func (c Chain) Admit(pod *v1.Pod, otherPods []*v1.Pod) (ok bool, reason, message string) {
	for _, h := range c {
		if h == nil {
			continue
		}
		if ok, reason, message = h.Admit(pod, otherPods); !ok {
			return false, reason, message
		}
	}
	return true, "", ""
}

var (
	_ Handler = HandlerFunc(nil)
	_ Handler = PodHandlerFunc(nil)
	_ Handler = Chain(nil)
)

// Reasons of refusals, upstream's (pkg/kubelet/lifecycle).
const (
	// ReasonOutOfCPU, ReasonOutOfMemory, ReasonOutOfEphemeralStorage and
	// ReasonOutOfPods refuse a pod that does not fit the node's
	// allocatable resources; any other resource's refusal is
	// InsufficientResourcePrefix followed by its name ("OutOfhugepages-2Mi",
	// "OutOfexample.com/gpu").
	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
	ReasonOutOfPods             = "OutOfpods"
	InsufficientResourcePrefix  = "OutOf"

	// ReasonInvalidNodeInfo refuses every pod while the node cannot be
	// read (MessageInvalidNodeInfo).
	ReasonInvalidNodeInfo  = "InvalidNodeInfo"
	MessageInvalidNodeInfo = "Kubelet cannot get node info."
	// ReasonUnexpectedAdmissionError refuses a critical pod that no
	// preemption can make room for, among others.
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

	// ReasonPodOSSelectorNodeLabelDoesNotMatch and ReasonPodOSNotSupported
	// refuse a pod meant for another operating system.
	ReasonPodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported                  = "PodOSNotSupported"
)

// The predicates, by the names upstream's scheduler plugins have: a pod they
// refuse has the name as its reason, and the message "Predicate <name>
// failed: <description>".
const (
	PredicateNodeAffinity    = "NodeAffinity"
	PredicateNodeName        = "NodeName"
	PredicateNodePorts       = "NodePorts"
	PredicateTaintToleration = "TaintToleration"
)

// The descriptions of the predicates' failures, upstream's.
const (
	DescNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	DescNodeName        = "node(s) didn't match the requested node name"
	DescNodePorts       = "node(s) didn't have free ports for the requested pod ports"
	DescTaintToleration = "node(s) had taints that the pod didn't tolerate"
)
