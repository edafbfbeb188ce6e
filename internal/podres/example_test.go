package podres_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/internal/podres"
)

// An init container that needs more than the app: the pod's effective
// request is the init container's.
func Example() {
	req := func(cpu string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "migrate", Resources: req("1")}},
		Containers:     []v1.Container{{Name: "app", Resources: req("250m")}},
	}}
	cpu := podres.Effective(pod, podres.Requests, nil)[v1.ResourceCPU]
	fmt.Println(cpu.String())
	// Output: 1
}
