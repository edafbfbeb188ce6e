package admission_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
)

// BenchmarkChain admits a pod with requests, a host port and a node
// selector against other pods that each request cpu and memory and hold a
// host port: the agent's chain for one new pod.
func BenchmarkChain(b *testing.B) {
	node := testNode()
	node.Status.Allocatable = list("cpu", "64", "memory", "256Gi", "pods", "2000")
	pred, err := admission.NewPredicates(admission.PredicateOptions{GOOS: "linux",
		Node: admission.NodeGetterFunc(func() (*v1.Node, error) { return node, nil })})
	if err != nil {
		b.Fatal(err)
	}
	chain := admission.Chain{admission.PodHandlerFunc(func(*v1.Pod) (bool, string, string) { return true, "", "" }), pred}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			others := make([]*v1.Pod, n)
			for i := range others {
				others[i] = withPorts(podOf(fmt.Sprintf("p%d", i), ctr("a", "cpu", "10m", "memory", "64Mi")),
					v1.ContainerPort{ContainerPort: 80, HostPort: int32(10000 + i)})
			}
			pod := withPorts(podOf("new", ctr("a", "cpu", "100m", "memory", "128Mi")), v1.ContainerPort{ContainerPort: 80, HostPort: 9999})
			pod.Spec.NodeSelector = map[string]string{"zone": "a"}
			b.ReportAllocs()
			for b.Loop() {
				if ok, reason, msg := chain.Admit(pod, others); !ok {
					b.Fatal(reason, msg)
				}
			}
		})
	}
}
