package envnode_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

// A Binder stands in for the scheduler envtest does not run: it binds to
// its node the pods that fit it. Here on a fake clientset, one pass.
func ExampleBinder_BindPending() {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule}}},
	}
	ci := v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "ci", Effect: v1.TaintEffectNoSchedule}
	pod := func(name string, spec v1.PodSpec) *v1.Pod {
		spec.Containers = []v1.Container{{Name: "app", Image: "busybox"}}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec}
	}
	web := pod("web", v1.PodSpec{Tolerations: []v1.Toleration{ci}})
	db := pod("db", v1.PodSpec{Tolerations: []v1.Toleration{ci}, NodeSelector: map[string]string{"disk": "hdd"}})
	batch := pod("batch", v1.PodSpec{})
	client := fake.NewClientset(node, web, db, batch)

	b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := b.BindPending(context.Background())
	fmt.Println("bound:", n, err)
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "binding" {
			binding := c.GetObject().(*v1.Binding)
			fmt.Printf("binding %s/%s to %s %s\n", a.GetNamespace(), binding.Name, binding.Target.Kind, binding.Target.Name)
		}
	}
	// Why the others stay Pending:
	fmt.Println(envnode.Fits(db, node))
	fmt.Println(envnode.Fits(batch, node))
	// Output:
	// bound: 1 <nil>
	// binding default/web to Node node-1
	// pod default/db on node node-1: node(s) didn't match Pod's node affinity/selector: does not fit
	// pod default/batch on node node-1: node(s) had untolerated taint {dedicated: ci}: does not fit
}
