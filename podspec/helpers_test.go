package podspec_test

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// list is a resource list of name, quantity pairs.
func list(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func reqCtr(name string, requests ...string) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: list(requests...)}}
}

func sidecar(name string, requests ...string) v1.Container {
	c := reqCtr(name, requests...)
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return c
}

func podOf(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{Containers: containers}}
}
