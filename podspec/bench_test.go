package podspec_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Admission sums every pod's requests on each admission: the pod-sized
// path it takes.
func BenchmarkEffectiveResources(b *testing.B) {
	req := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Resources: req}}, Containers: []v1.Container{{Resources: req}, {Resources: req}}}}
	b.ReportAllocs()
	for b.Loop() {
		podspec.EffectiveResources(pod, podspec.ContainerRequests, nil)
	}
}
