package containerconfig_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// BenchmarkServiceEnv is the service part of a container's environment,
// computed at every container start, with services spread over 10
// namespaces (the pod sees a tenth of them, plus the kubernetes service).
func BenchmarkServiceEnv(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			services := make([]*v1.Service, n)
			for i := range services {
				services[i] = &v1.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("svc-%d", i)},
					Spec:       v1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Ports: []v1.ServicePort{{Name: "http", Port: 80}}},
				}
			}
			services[0].Namespace, services[0].Name = "default", "kubernetes"
			b.ReportAllocs()
			for b.Loop() {
				if env := containerconfig.ServiceEnv(services, "ns-1", true); len(env) == 0 {
					b.Fatal("no variables")
				}
			}
		})
	}
}
