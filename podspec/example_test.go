package podspec_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// A static pod with a sidecar and an init container: what every block of a
// node asks of it.
func Example() {
	req := func(cpu string) v1.ResourceRequirements {
		q := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		return v1.ResourceRequirements{Requests: q}
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: "file"}},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "proxy", Resources: req("100m"), RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)},
				{Name: "migrate", Resources: req("1")},
			},
			Containers: []v1.Container{{Name: "app", Resources: req("250m")}},
		},
	}
	cpu := podspec.Requests(pod)[v1.ResourceCPU]
	fmt.Println("full name:", podspec.FullName(pod))
	fmt.Println("static:", podspec.IsStatic(pod), "critical:", podspec.IsCritical(pod))
	fmt.Println("QoS:", podspec.QOSClass(pod))
	fmt.Println("cpu requested:", cpu.String())
	fmt.Println("proxy is a sidecar:", podspec.IsSidecar(&pod.Spec.InitContainers[0]))
	fmt.Println("migrate restarts after exit 1:", podspec.RestartsAfterExit(pod, &pod.Spec.InitContainers[1], 1))
	// Output:
	// full name: web-node1_default
	// static: true critical: true
	// QoS: Burstable
	// cpu requested: 1100m
	// proxy is a sidecar: true
	// migrate restarts after exit 1: true
}
