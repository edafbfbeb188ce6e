package envnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

func TestFits(t *testing.T) {
	node := func(mutate ...func(*v1.Node)) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd", "cores": "8"}}}
		for _, m := range mutate {
			m(n)
		}
		return n
	}
	tainted := func(key, value string, effect v1.TaintEffect) func(*v1.Node) {
		return func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
		}
	}
	required := func(terms ...v1.NodeSelectorTerm) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	pod := func(mutate ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	tolerate := func(tol v1.Toleration) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tol) }
	}
	const (
		affinity = "node(s) didn't match Pod's node affinity/selector"
		cordoned = "node(s) were unschedulable"
	)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want string // "" fits
	}{
		{"any pod fits a plain node", pod(), node(), ""},
		{"matching nodeSelector", pod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node(), ""},
		{"nodeSelector of another value", pod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }), node(), affinity},
		{"nodeSelector of a missing label", pod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "true"} }), node(), affinity},
		{"affinity In", pod(required(expr("disk", v1.NodeSelectorOpIn, "hdd", "ssd"))), node(), ""},
		{"affinity NotIn", pod(required(expr("disk", v1.NodeSelectorOpNotIn, "ssd"))), node(), affinity},
		{"affinity Exists", pod(required(expr("disk", v1.NodeSelectorOpExists))), node(), ""},
		{"affinity DoesNotExist", pod(required(expr("disk", v1.NodeSelectorOpDoesNotExist))), node(), affinity},
		{"affinity Gt", pod(required(expr("cores", v1.NodeSelectorOpGt, "4"))), node(), ""},
		{"affinity Lt", pod(required(expr("cores", v1.NodeSelectorOpLt, "4"))), node(), affinity},
		{"affinity terms are ORed", pod(required(expr("disk", v1.NodeSelectorOpIn, "hdd"), expr("cores", v1.NodeSelectorOpIn, "8"))), node(), ""},
		{"affinity expressions of a term are ANDed", pod(required(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}},
			{Key: "cores", Operator: v1.NodeSelectorOpIn, Values: []string{"4"}},
		}})), node(), affinity},
		{"affinity matchFields on the name", pod(required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-1"}}}})), node(), ""},
		{"affinity matchFields on another name", pod(required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-2"}}}})), node(), affinity},
		{"an empty term matches nothing", pod(required(v1.NodeSelectorTerm{})), node(), affinity},
		{"no terms match nothing", pod(required()), node(), affinity},
		{"an invalid requirement matches nothing", pod(required(expr("cores", v1.NodeSelectorOpGt, "many"))), node(), affinity},
		{"untolerated NoSchedule taint", pod(), node(tainted("dedicated", "ci", v1.TaintEffectNoSchedule)), "node(s) had untolerated taint {dedicated: ci}"},
		{"untolerated NoExecute taint", pod(), node(tainted("dedicated", "ci", v1.TaintEffectNoExecute)), "node(s) had untolerated taint {dedicated: ci}"},
		{"PreferNoSchedule is a preference", pod(), node(tainted("dedicated", "ci", v1.TaintEffectPreferNoSchedule)), ""},
		{"toleration Equal", pod(tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "ci", Effect: v1.TaintEffectNoSchedule})),
			node(tainted("dedicated", "ci", v1.TaintEffectNoSchedule)), ""},
		{"toleration of another value", pod(tolerate(v1.Toleration{Key: "dedicated", Value: "qa"})),
			node(tainted("dedicated", "ci", v1.TaintEffectNoSchedule)), "node(s) had untolerated taint {dedicated: ci}"},
		{"toleration of another effect", pod(tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})),
			node(tainted("dedicated", "ci", v1.TaintEffectNoSchedule)), "node(s) had untolerated taint {dedicated: ci}"},
		{"toleration of every taint", pod(tolerate(v1.Toleration{Operator: v1.TolerationOpExists})),
			node(tainted("a", "1", v1.TaintEffectNoSchedule), tainted("b", "2", v1.TaintEffectNoExecute)), ""},
		{"the first untolerated taint is named", pod(tolerate(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists})),
			node(tainted("a", "1", v1.TaintEffectNoSchedule), tainted("b", "2", v1.TaintEffectNoExecute)), "node(s) had untolerated taint {b: 2}"},
		{"the not-ready taint a new Node gets", pod(), node(tainted(v1.TaintNodeNotReady, "", v1.TaintEffectNoSchedule)),
			"node(s) had untolerated taint {node.kubernetes.io/not-ready: }"},
		{"a cordoned node", pod(), node(func(n *v1.Node) { n.Spec.Unschedulable = true }), cordoned},
		{"a cordoned node and a pod that tolerates it", pod(tolerate(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			node(func(n *v1.Node) { n.Spec.Unschedulable = true }), ""},
		{"cordoned comes before affinity", pod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			node(func(n *v1.Node) { n.Spec.Unschedulable = true }), cordoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := envnode.Fits(tc.pod, tc.node)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, envnode.ErrDoesNotFit)
			assert.ErrorContains(t, err, "pod ns/web on node node-1: "+tc.want+": ")
		})
	}
}

func TestPending(t *testing.T) {
	now := metav1.NewTime(time.Unix(0, 0))
	for _, tc := range []struct {
		name  string
		pod   func(*v1.Pod)
		sched string
		want  bool
	}{
		{"no node, default scheduler", func(*v1.Pod) {}, "", true},
		{"no scheduler named is the default", func(p *v1.Pod) { p.Spec.SchedulerName = "" }, "", true},
		{"the binder's own scheduler", func(p *v1.Pod) { p.Spec.SchedulerName = "mine" }, "mine", true},
		{"another scheduler", func(p *v1.Pod) { p.Spec.SchedulerName = "mine" }, "", false},
		{"bound", func(p *v1.Pod) { p.Spec.NodeName = "node-1" }, "", false},
		{"gated", func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}} }, "", false},
		{"being deleted", func(p *v1.Pod) { p.DeletionTimestamp = &now }, "", false},
		{"succeeded", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }, "", false},
		{"failed", func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName}}
			tc.pod(p)
			assert.Equal(t, tc.want, envnode.Pending(p, tc.sched))
		})
	}
}
