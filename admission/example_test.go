package admission_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/admission"
)

func Example() {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
	pred, err := admission.NewPredicates(admission.PredicateOptions{
		Node: admission.NodeGetterFunc(func() (*v1.Node, error) { return node, nil }),
	})
	if err != nil {
		panic(err)
	}
	chain := admission.Chain{pred}

	pod := func(name, memory string, port int32, selector map[string]string) *v1.Pod {
		c := v1.Container{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(memory)}}}
		if port != 0 {
			c.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port}}
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name"},
			Spec: v1.PodSpec{NodeName: "node-1", NodeSelector: selector, Containers: []v1.Container{c}}}
	}
	var admitted []*v1.Pod
	for _, p := range []*v1.Pod{
		pod("web", "512Mi", 8080, nil),
		pod("big", "2Gi", 0, nil),
		pod("web-2", "64Mi", 8080, nil),
		pod("gpu", "64Mi", 0, map[string]string{"accelerator": "gpu"}),
		pod("cache", "256Mi", 0, map[string]string{"disk": "ssd"}),
	} {
		ok, reason, msg := chain.Admit(p, admitted)
		if !ok {
			fmt.Printf("%s: %s: %s\n", p.Name, reason, msg)
			continue
		}
		admitted = append(admitted, p)
		fmt.Printf("%s: admitted\n", p.Name)
	}
	// Output:
	// web: admitted
	// big: OutOfmemory: Node didn't have enough resource: memory, requested: 2147483648, used: 536870912, capacity: 1073741824
	// web-2: NodePorts: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports
	// gpu: NodeAffinity: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector
	// cache: admitted
}
