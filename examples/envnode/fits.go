package envnode

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// ErrDoesNotFit is wrapped by Fits's error when a pod cannot go to a node.
var ErrDoesNotFit = errors.New("does not fit")

// The messages of Fits's errors: the scheduler's filter plugins'
// (NodeUnschedulable, NodeAffinity, TaintToleration).
const (
	reasonUnschedulable = "node(s) were unschedulable"
	reasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
)

// Pending reports whether pod waits for a scheduler named schedulerName
// ("" means v1.DefaultSchedulerName): it has no node, names that scheduler,
// has no scheduling gates, is not being deleted and has not finished. Those
// are the pods a Binder binds, when they fit its node.
func Pending(pod *v1.Pod, schedulerName string) bool {
	if schedulerName == "" {
		schedulerName = v1.DefaultSchedulerName
	}
	name := pod.Spec.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName // as the API server defaults it
	}
	return pod.Spec.NodeName == "" && name == schedulerName && len(pod.Spec.SchedulingGates) == 0 &&
		pod.DeletionTimestamp == nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// Fits reports whether the scheduler would put pod on node, as far as these
// filters of upstream's scheduler go, in this order:
//
//   - NodeUnschedulable: a cordoned node (spec.unschedulable) takes only
//     pods that tolerate node.kubernetes.io/unschedulable:NoSchedule;
//   - NodeAffinity: the node's labels match the pod's nodeSelector, and one
//     term of its required node affinity (matchExpressions on labels with
//     In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on
//     metadata.name);
//   - TaintToleration: the pod tolerates every NoSchedule and NoExecute
//     taint of the node (PreferNoSchedule is a preference).
//
// It returns nil when the pod fits, else an error wrapping ErrDoesNotFit
// with the scheduler's message ("node(s) had untolerated taint {k: v}").
// Resources, host ports, volumes, pod affinity and topology spread are not
// considered: every pod that passes these filters fits.
func Fits(pod *v1.Pod, node *v1.Node) error {
	if node.Spec.Unschedulable && !tolerates(pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
		return fmt.Errorf("pod %s/%s on node %s: %s: %w", pod.Namespace, pod.Name, node.Name, reasonUnschedulable, ErrDoesNotFit)
	}
	if !matchesAffinity(pod, node) {
		return fmt.Errorf("pod %s/%s on node %s: %s: %w", pod.Namespace, pod.Name, node.Name, reasonAffinity, ErrDoesNotFit)
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, t) {
			return fmt.Errorf("pod %s/%s on node %s: node(s) had untolerated taint {%s: %s}: %w", pod.Namespace, pod.Name, node.Name, t.Key, t.Value, ErrDoesNotFit)
		}
	}
	return nil
}

// tolerates reports whether one of tolerations tolerates taint. Numeric
// comparisons (Gt, Lt) are allowed: a pod carries them only when the API
// server accepted them.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, true) {
			return true
		}
	}
	return false
}

// matchesAffinity reports whether node matches pod's nodeSelector and, if
// it has one, its required node affinity: one of the terms, a term being
// the conjunction of its requirements. A term without requirements, or
// with one that cannot be parsed, matches nothing, as upstream.
func matchesAffinity(pod *v1.Pod, node *v1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	fields := labels.Set{"metadata.name": node.Name}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		if matchesAll(term.MatchExpressions, labels.Set(node.Labels)) && matchesAll(term.MatchFields, fields) {
			return true
		}
	}
	return false
}

// operator is the label selector operator of a node selector operator.
func operator(op v1.NodeSelectorOperator) (selection.Operator, bool) {
	switch op {
	case v1.NodeSelectorOpIn:
		return selection.In, true
	case v1.NodeSelectorOpNotIn:
		return selection.NotIn, true
	case v1.NodeSelectorOpExists:
		return selection.Exists, true
	case v1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist, true
	case v1.NodeSelectorOpGt:
		return selection.GreaterThan, true
	case v1.NodeSelectorOpLt:
		return selection.LessThan, true
	}
	return "", false
}

// matchesAll reports whether set meets every requirement; an unknown
// operator or an invalid requirement does not match.
func matchesAll(reqs []v1.NodeSelectorRequirement, set labels.Set) bool {
	for _, r := range reqs {
		op, ok := operator(r.Operator)
		if !ok {
			return false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil || !req.Matches(set) {
			return false
		}
	}
	return true
}
