package admission_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/admission"
)

func list(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, requests ...string) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: list(requests...)}}
}

func sidecar(name string, requests ...string) v1.Container {
	c := ctr(name, requests...)
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return c
}

func podOf(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: containers}}
}

func static(p *v1.Pod) *v1.Pod {
	p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	return p
}

func TestFit(t *testing.T) {
	alloc := list("cpu", "2", "memory", "1Gi", "pods", "3", "ephemeral-storage", "10Gi", "example.com/gpu", "1", "hugepages-2Mi", "0")
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		others []*v1.Pod
		alloc  v1.ResourceList
		want   []admission.InsufficientResource
	}{
		{name: "fits", pod: podOf("p", ctr("a", "cpu", "1", "memory", "512Mi"))},
		{name: "best effort fits", pod: podOf("p", ctr("a"))},
		{name: "memory", pod: podOf("p", ctr("a", "memory", "100Ti")),
			want: []admission.InsufficientResource{{Name: "memory", Requested: 100 << 40, Used: 0, Capacity: 1 << 30}}},
		{name: "memory used by others", pod: podOf("p", ctr("a", "memory", "600Mi")), others: []*v1.Pod{podOf("o", ctr("a", "memory", "500Mi"))},
			want: []admission.InsufficientResource{{Name: "memory", Requested: 600 << 20, Used: 500 << 20, Capacity: 1 << 30}}},
		{name: "cpu in millicores", pod: podOf("p", ctr("a", "cpu", "2500m")),
			want: []admission.InsufficientResource{{Name: "cpu", Requested: 2500, Capacity: 2000}}},
		{name: "pods first, then cpu, memory, storage, the rest by name", pod: podOf("p",
			ctr("a", "cpu", "3", "memory", "2Gi", "ephemeral-storage", "11Gi", "example.com/gpu", "2", "hugepages-2Mi", "2Mi")),
			others: []*v1.Pod{podOf("o1", ctr("a")), podOf("o2", ctr("a")), podOf("o3", ctr("a"))},
			want: []admission.InsufficientResource{
				{Name: "pods", Requested: 1, Used: 3, Capacity: 3},
				{Name: "cpu", Requested: 3000, Capacity: 2000},
				{Name: "memory", Requested: 2 << 30, Capacity: 1 << 30},
				{Name: "ephemeral-storage", Requested: 11 << 30, Capacity: 10 << 30},
				{Name: "example.com/gpu", Requested: 2, Capacity: 1},
				{Name: "hugepages-2Mi", Requested: 2 << 20, Capacity: 0},
			}},
		{name: "pods alone for a pod requesting nothing", pod: podOf("p", ctr("a")),
			others: []*v1.Pod{podOf("o1", ctr("a")), podOf("o2", ctr("a")), podOf("o3", ctr("a"))},
			want:   []admission.InsufficientResource{{Name: "pods", Requested: 1, Used: 3, Capacity: 3}}},
		{name: "an extended resource the node does not list is left out", pod: podOf("p", ctr("a", "other.io/fpga", "1"))},
		{name: "one the node lists with none left lacks", pod: podOf("p", ctr("a", "example.com/gpu", "1")),
			others: []*v1.Pod{podOf("o", ctr("a", "example.com/gpu", "1"))},
			want:   []admission.InsufficientResource{{Name: "example.com/gpu", Requested: 1, Used: 1, Capacity: 1}}},
		{name: "no allocatable at all", pod: podOf("p", ctr("a", "cpu", "1")), alloc: v1.ResourceList{},
			want: []admission.InsufficientResource{{Name: "pods", Requested: 1}, {Name: "cpu", Requested: 1000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := alloc
			if tc.alloc != nil {
				a = tc.alloc
			}
			assert.Equal(t, tc.want, admission.Fit(tc.pod, tc.others, a))
		})
	}
}

func TestInsufficientResourceWords(t *testing.T) {
	r := admission.InsufficientResource{Name: v1.ResourceMemory, Requested: 3, Used: 2, Capacity: 4}
	assert.Equal(t, "OutOfmemory", r.Reason())
	assert.Equal(t, "Node didn't have enough resource: memory, requested: 3, used: 2, capacity: 4", r.Message())
	for name, reason := range map[v1.ResourceName]string{"cpu": admission.ReasonOutOfCPU, "memory": admission.ReasonOutOfMemory,
		"ephemeral-storage": admission.ReasonOutOfEphemeralStorage, "pods": admission.ReasonOutOfPods, "example.com/gpu": "OutOfexample.com/gpu"} {
		assert.Equal(t, reason, admission.InsufficientResource{Name: name}.Reason())
	}
}

func TestMatchesNodeAffinity(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", "gen": "3"}}}
	required := func(terms ...v1.NodeSelectorTerm) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	field := func(op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name     string
		selector map[string]string
		affinity *v1.Affinity
		want     bool
	}{
		{name: "nothing asked", want: true},
		{name: "selector matches", selector: map[string]string{"zone": "a"}, want: true},
		{name: "selector value differs", selector: map[string]string{"zone": "b"}},
		{name: "selector label missing", selector: map[string]string{"disk": "ssd"}},
		{name: "In", affinity: required(expr("zone", v1.NodeSelectorOpIn, "a", "b")), want: true},
		{name: "NotIn", affinity: required(expr("zone", v1.NodeSelectorOpNotIn, "a"))},
		{name: "Exists", affinity: required(expr("zone", v1.NodeSelectorOpExists)), want: true},
		{name: "DoesNotExist", affinity: required(expr("zone", v1.NodeSelectorOpDoesNotExist))},
		{name: "Gt", affinity: required(expr("gen", v1.NodeSelectorOpGt, "2")), want: true},
		{name: "Lt", affinity: required(expr("gen", v1.NodeSelectorOpLt, "2"))},
		{name: "terms are ORed", affinity: required(expr("zone", v1.NodeSelectorOpIn, "b"), expr("gen", v1.NodeSelectorOpIn, "3")), want: true},
		{name: "empty terms match nothing", affinity: required(v1.NodeSelectorTerm{})},
		{name: "no terms match nothing", affinity: required()},
		{name: "a bad operator matches nothing", affinity: required(expr("zone", "Near", "a"))},
		{name: "a bad value matches nothing", affinity: required(expr("gen", v1.NodeSelectorOpGt, "x"))},
		{name: "a bad term does not spoil a good one", affinity: required(expr("zone", "Near", "a"), expr("zone", v1.NodeSelectorOpIn, "a")), want: true},
		{name: "field In", affinity: required(field(v1.NodeSelectorOpIn, "n1")), want: true},
		{name: "field In another", affinity: required(field(v1.NodeSelectorOpIn, "n2"))},
		{name: "field NotIn", affinity: required(field(v1.NodeSelectorOpNotIn, "n2")), want: true},
		{name: "field with two values", affinity: required(field(v1.NodeSelectorOpIn, "n1", "n2"))},
		{name: "selector and affinity both", selector: map[string]string{"zone": "b"}, affinity: required(expr("zone", v1.NodeSelectorOpExists))},
		{name: "preferred only", affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podOf("p", ctr("a"))
			p.Spec.NodeSelector, p.Spec.Affinity = tc.selector, tc.affinity
			assert.Equal(t, tc.want, admission.MatchesNodeAffinity(p, node))
		})
	}
	assert.False(t, admission.MatchesNodeAffinity(podOf("p"), nil))
}

func withPorts(p *v1.Pod, ports ...v1.ContainerPort) *v1.Pod {
	p.Spec.Containers[0].Ports = ports
	return p
}

func TestHostPortsFree(t *testing.T) {
	port := func(ip string, proto v1.Protocol, n int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostIP: ip, Protocol: proto, HostPort: n}
	}
	for _, tc := range []struct {
		name       string
		want, used v1.ContainerPort
		free       bool
	}{
		{name: "same port", want: port("", "", 8080), used: port("", v1.ProtocolTCP, 8080)},
		{name: "another port", want: port("", "", 8080), used: port("", "", 8081), free: true},
		{name: "another protocol", want: port("", v1.ProtocolUDP, 8080), used: port("", "", 8080), free: true},
		{name: "another IP", want: port("10.0.0.1", "", 8080), used: port("10.0.0.2", "", 8080), free: true},
		{name: "same IP", want: port("10.0.0.1", "", 8080), used: port("10.0.0.1", "", 8080)},
		{name: "wanted on every IP", want: port("0.0.0.0", "", 8080), used: port("10.0.0.1", "", 8080)},
		{name: "used on every IP", want: port("10.0.0.1", "", 8080), used: port("", "", 8080)},
		{name: "no host port", want: v1.ContainerPort{ContainerPort: 8080}, used: v1.ContainerPort{ContainerPort: 8080}, free: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := withPorts(podOf("p", ctr("a")), tc.want)
			o := withPorts(podOf("o", ctr("a")), tc.used)
			assert.Equal(t, tc.free, admission.HostPortsFree(p, []*v1.Pod{o}))
		})
	}
	t.Run("a sidecar holds its port, an init container does not", func(t *testing.T) {
		p := withPorts(podOf("p", ctr("a")), port("", "", 9000))
		o := podOf("o", ctr("a"))
		o.Spec.InitContainers = []v1.Container{ctr("init"), sidecar("s")}
		o.Spec.InitContainers[0].Ports = []v1.ContainerPort{port("", "", 9000)}
		assert.True(t, admission.HostPortsFree(p, []*v1.Pod{o}))
		o.Spec.InitContainers[1].Ports = []v1.ContainerPort{port("", "", 9000)}
		assert.False(t, admission.HostPortsFree(p, []*v1.Pod{o}))
	})
}

func TestUntoleratedTaint(t *testing.T) {
	noExec := v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name        string
		taint       v1.Taint
		tolerations []v1.Toleration
		untolerated bool
	}{
		{name: "NoSchedule is not the kubelet's", taint: v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}},
		{name: "PreferNoSchedule neither", taint: v1.Taint{Key: "k", Effect: v1.TaintEffectPreferNoSchedule}},
		{name: "NoExecute untolerated", taint: noExec, untolerated: true},
		{name: "Equal", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpEqual, Value: "v"}}},
		{name: "empty operator is Equal", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Value: "v"}}},
		{name: "Equal another value", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Value: "w"}}, untolerated: true},
		{name: "Exists", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}},
		{name: "Exists any key", taint: noExec, tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}}},
		{name: "another effect", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, untolerated: true},
		{name: "the same effect", taint: noExec, tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}},
		{name: "Gt is off", taint: v1.Taint{Key: "k", Value: "5", Effect: v1.TaintEffectNoExecute},
			tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "1"}}, untolerated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podOf("p", ctr("a"))
			p.Spec.Tolerations = tc.tolerations
			_, untolerated := admission.UntoleratedTaint(p, []v1.Taint{tc.taint})
			assert.Equal(t, tc.untolerated, untolerated)
		})
	}
}

// testNode is a node with 2 cpus, 1Gi of memory and 10 pods, labelled
// zone=a, tainted as asked.
func testNode(taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Spec:   v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: list("cpu", "2", "memory", "1Gi", "pods", "10")}}
}

type preemptions struct{ victims []string }

func (p *preemptions) Preempt(victim, _ *v1.Pod) error {
	p.victims = append(p.victims, victim.Name)
	return nil
}

func TestPredicates(t *testing.T) {
	taint := v1.Taint{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoExecute}
	guaranteed := func(name, mem string) *v1.Pod {
		c := ctr("a", "cpu", "100m", "memory", mem)
		c.Resources.Limits = list("cpu", "100m", "memory", mem)
		return podOf(name, c)
	}
	for _, tc := range []struct {
		name            string
		pod             *v1.Pod
		others          []*v1.Pod
		node            *v1.Node
		reason, message string
		victims         []string
	}{
		{name: "admitted", pod: podOf("p", ctr("a", "memory", "100Mi"))},
		{name: "OS first", pod: func() *v1.Pod {
			p := podOf("p", ctr("a", "memory", "2Gi"))
			p.Spec.OS = &v1.PodOS{Name: "plan9"}
			return p
		}(), reason: admission.ReasonPodOSNotSupported, message: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "OutOfmemory", pod: podOf("p", ctr("a", "memory", "2Gi")), reason: "OutOfmemory",
			message: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{name: "resources before affinity", pod: func() *v1.Pod {
			p := podOf("p", ctr("a", "cpu", "3"))
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
			return p
		}(), reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "affinity before node name", pod: func() *v1.Pod {
			p := podOf("p", ctr("a"))
			p.Spec.NodeSelector, p.Spec.NodeName = map[string]string{"zone": "b"}, "n2"
			return p
		}(), reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node name", pod: func() *v1.Pod { p := podOf("p", ctr("a")); p.Spec.NodeName = "n2"; return p }(),
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "host ports", pod: withPorts(podOf("p", ctr("a")), v1.ContainerPort{HostPort: 80}),
			others: []*v1.Pod{withPorts(podOf("o", ctr("a")), v1.ContainerPort{HostPort: 80})},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "taint", pod: podOf("p", ctr("a")), node: testNode(taint),
			reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "a static pod ignores taints", pod: static(podOf("p", ctr("a"))), node: testNode(taint)},
		{name: "a critical pod preempts", pod: static(podOf("p", ctr("a", "memory", "500Mi"))),
			others: []*v1.Pod{guaranteed("g", "300Mi"), podOf("be", ctr("a")), podOf("bu-small", ctr("a", "memory", "100Mi")),
				podOf("bu-big", ctr("a", "memory", "500Mi")), static(podOf("s", ctr("a", "memory", "100Mi")))},
			victims: []string{"bu-big"}},
		{name: "a critical pod that nothing makes room for", pod: static(podOf("p", ctr("a", "memory", "100Ti"))),
			others: []*v1.Pod{static(podOf("s", ctr("a", "memory", "100Mi"))), podOf("o", ctr("a", "memory", "200Mi"))},
			reason: admission.ReasonUnexpectedAdmissionError,
			message: fmt.Sprintf("Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: "+
				"no set of running pods found to reclaim resources: [(res: memory, q: %d), ]", int64(100<<40)-(1<<30-300<<20)-200<<20)},
		{name: "a critical pod is refused for ports", pod: withPorts(static(podOf("p", ctr("a", "memory", "2Gi"))), v1.ContainerPort{HostPort: 80}),
			others: []*v1.Pod{withPorts(podOf("o", ctr("a")), v1.ContainerPort{HostPort: 80})},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == nil {
				node = testNode()
			}
			pre := &preemptions{}
			pred, err := admission.NewPredicates(admission.PredicateOptions{GOOS: "linux", Preemptor: pre,
				Node: admission.NodeGetterFunc(func() (*v1.Node, error) { return node, nil })})
			require.NoError(t, err)
			ok, reason, message := pred.Admit(tc.pod, tc.others)
			assert.Equal(t, tc.reason == "", ok)
			assert.Equal(t, tc.reason, reason)
			assert.Equal(t, tc.message, message)
			assert.Equal(t, tc.victims, pre.victims)
		})
	}
}

func TestPredicatesWithoutNode(t *testing.T) {
	_, err := admission.NewPredicates(admission.PredicateOptions{})
	require.ErrorIs(t, err, admission.ErrMissingNode)
	pred, err := admission.NewPredicates(admission.PredicateOptions{Node: admission.NodeGetterFunc(func() (*v1.Node, error) {
		return nil, errors.New("no node")
	})})
	require.NoError(t, err)
	ok, reason, message := pred.Admit(podOf("p", ctr("a")), nil)
	assert.False(t, ok)
	assert.Equal(t, admission.ReasonInvalidNodeInfo, reason)
	assert.Equal(t, admission.MessageInvalidNodeInfo, message)
}

func TestPredicatesWithoutPreemptor(t *testing.T) {
	pred, err := admission.NewPredicates(admission.PredicateOptions{Node: admission.NodeGetterFunc(func() (*v1.Node, error) { return testNode(), nil })})
	require.NoError(t, err)
	ok, reason, _ := pred.Admit(static(podOf("p", ctr("a", "memory", "2Gi"))), nil)
	assert.False(t, ok)
	assert.Equal(t, "OutOfmemory", reason)
}

func TestChain(t *testing.T) {
	var asked []string
	h := func(name string, ok bool) admission.Handler {
		return admission.HandlerFunc(func(*v1.Pod, []*v1.Pod) (bool, string, string) {
			asked = append(asked, name)
			if ok {
				return true, "", ""
			}
			return false, "Reason" + name, "message " + name
		})
	}
	for _, tc := range []struct {
		name            string
		chain           admission.Chain
		ok              bool
		reason, message string
		asked           []string
	}{
		{name: "empty", chain: nil, ok: true},
		{name: "all admit", chain: admission.Chain{h("a", true), nil, h("b", true)}, ok: true, asked: []string{"a", "b"}},
		{name: "first refusal wins", chain: admission.Chain{h("a", true), h("b", false), h("c", false)},
			reason: "Reasonb", message: "message b", asked: []string{"a", "b"}},
		{name: "pod handler", chain: admission.Chain{admission.PodHandlerFunc(func(*v1.Pod) (bool, string, string) { return false, "R", "m" })},
			reason: "R", message: "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			ok, reason, message := tc.chain.Admit(podOf("p"), nil)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.reason, reason)
			assert.Equal(t, tc.message, message)
			assert.Equal(t, tc.asked, asked)
		})
	}
}

func TestAdmitOS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		reason string
	}{
		{name: "no OS named", pod: &v1.Pod{}},
		{name: "spec.os linux", pod: &v1.Pod{Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Linux}}}},
		{name: "spec.os windows", pod: &v1.Pod{Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Windows}}}, reason: admission.ReasonPodOSNotSupported},
		{name: "the os label linux", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelOSStable: "linux"}}}},
		{name: "the os label windows", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelOSStable: "windows"}}},
			reason: admission.ReasonPodOSSelectorNodeLabelDoesNotMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := admission.AdmitOS(tc.pod, "linux")
			assert.Equal(t, tc.reason == "", ok)
			assert.Equal(t, tc.reason, reason)
			if !ok {
				assert.Contains(t, msg, "Failed to admit pod as the ")
			}
		})
	}
}

func FuzzFailuresNeverPanic(f *testing.F) {
	f.Add("cpu", "1", int32(80), "zone", "In")
	f.Fuzz(func(t *testing.T, res, qty string, port int32, key, op string) {
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return
		}
		p := podOf("p", v1.Container{Name: "a", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceName(res): q}},
			Ports: []v1.ContainerPort{{HostPort: port}}})
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOperator(op)}}}}}}}
		_ = admission.Failures(p, []*v1.Pod{p}, testNode())
	})
}
