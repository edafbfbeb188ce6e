package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// MatchesNodeName reports whether the pod may run on a node of that name:
// it names no node, or that one.
func MatchesNodeName(pod *v1.Pod, nodeName string) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == nodeName
}

// MatchesNodeAffinity reports whether node satisfies the pod's nodeSelector
// and its required node affinity, as upstream's scheduler and kubelet
// decide it: every nodeSelector label, and at least one of the required
// terms, a term matching when all its matchExpressions match the node's
// labels and all its matchFields (metadata.name, In or NotIn one value)
// match the node. Terms without expressions or fields are left out, so
// that a required affinity of empty terms matches no node; a term that does
// not parse (an unknown operator, a bad value) matches nothing.
func MatchesNodeAffinity(pod *v1.Pod, node *v1.Node) bool {
	if node == nil {
		return false
	}
	set := labels.Set(node.Labels)
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(set) {
		return false
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	nodeFields := fields.Set{}
	if node.Name != "" {
		nodeFields["metadata.name"] = node.Name
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		if termMatches(term, set, nodeFields) {
			return true
		}
	}
	return false
}

func termMatches(term v1.NodeSelectorTerm, nodeLabels labels.Set, nodeFields fields.Set) bool {
	if len(term.MatchExpressions) > 0 {
		sel, ok := labelSelector(term.MatchExpressions)
		if !ok || !sel.Matches(nodeLabels) {
			return false
		}
	}
	if len(term.MatchFields) > 0 {
		sel, ok := fieldSelector(term.MatchFields)
		if !ok {
			return false
		}
		if len(nodeFields) > 0 && !sel.Matches(nodeFields) {
			return false
		}
	}
	return true
}

var selectorOps = map[v1.NodeSelectorOperator]selection.Operator{
	v1.NodeSelectorOpIn:           selection.In,
	v1.NodeSelectorOpNotIn:        selection.NotIn,
	v1.NodeSelectorOpExists:       selection.Exists,
	v1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	v1.NodeSelectorOpGt:           selection.GreaterThan,
	v1.NodeSelectorOpLt:           selection.LessThan,
}

func labelSelector(reqs []v1.NodeSelectorRequirement) (labels.Selector, bool) {
	sel := labels.NewSelector()
	for _, r := range reqs {
		op, ok := selectorOps[r.Operator]
		if !ok {
			return nil, false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, false
		}
		sel = sel.Add(*req)
	}
	return sel, true
}

func fieldSelector(reqs []v1.NodeSelectorRequirement) (fields.Selector, bool) {
	sels := make([]fields.Selector, 0, len(reqs))
	for _, r := range reqs {
		if len(r.Values) != 1 {
			return nil, false
		}
		switch r.Operator {
		case v1.NodeSelectorOpIn:
			sels = append(sels, fields.OneTermEqualSelector(r.Key, r.Values[0]))
		case v1.NodeSelectorOpNotIn:
			sels = append(sels, fields.OneTermNotEqualSelector(r.Key, r.Values[0]))
		default:
			return nil, false
		}
	}
	return fields.AndSelectors(sels...), true
}

// bindAll is the host IP that stands for every address.
const bindAll = "0.0.0.0"

// hostPort is one port a pod holds on the node.
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts lists the ports pod holds on the node: those with a hostPort
// of its containers and of its sidecars (restartable init containers, which
// run as long as the pod), the protocol TCP and the address 0.0.0.0 when
// unset.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = bindAll
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// HostPortsFree reports whether every host port of pod is free of the
// other pods', as upstream's NodePorts predicate: two ports conflict when
// their protocol and number are the same and their host IPs are the same
// or either is 0.0.0.0 (or unset).
func HostPortsFree(pod *v1.Pod, otherPods []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return true
	}
	for _, o := range otherPods {
		for _, used := range hostPorts(o) {
			for _, w := range want {
				if w.port == used.port && w.protocol == used.protocol &&
					(w.ip == used.ip || w.ip == bindAll || used.ip == bindAll) {
					return false
				}
			}
		}
	}
	return true
}

// UntoleratedTaint returns the first of the taints with effect NoExecute
// that the pod's tolerations do not tolerate, and whether there is one:
// upstream's kubelet refuses such a pod (a NoSchedule taint is the
// scheduler's business, and the kubelet admits pods bound to the node
// despite it). The numeric operators Lt and Gt tolerate nothing, as
// upstream with its TaintTolerationComparisonOperators feature off.
func UntoleratedTaint(pod *v1.Pod, taints []v1.Taint) (v1.Taint, bool) {
	for _, t := range taints {
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerated(pod.Spec.Tolerations, &t) {
			return t, true
		}
	}
	return v1.Taint{}, false
}

func tolerated(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for _, t := range tolerations {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case "", v1.TolerationOpEqual:
			if t.Value == taint.Value {
				return true
			}
		case v1.TolerationOpExists:
			return true
		}
	}
	return false
}
