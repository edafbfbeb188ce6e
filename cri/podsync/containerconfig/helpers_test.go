package containerconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// newBuilder builds a Builder with opts, failing the test on an error.
func newBuilder(t *testing.T, opts containerconfig.Options) *containerconfig.Builder {
	t.Helper()
	b, err := containerconfig.New(opts)
	require.NoError(t, err)
	return b
}

// containerConfig builds the config of the pod's first app container, a
// regular one that has never run, on no pod network.
func containerConfig(b *containerconfig.Builder, pod *v1.Pod) (*runtimeapi.ContainerConfig, error) {
	return b.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
}

// envOf is a container config's environment as a map.
func envOf(cfg *runtimeapi.ContainerConfig) map[string]string {
	env := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	return env
}

func newPod(policy v1.RestartPolicy, inits []v1.Container, apps ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: policy, InitContainers: inits, Containers: apps},
	}
}

func ctr(name string) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1", Command: []string{"sleep", "3600"}}
}

// sized is a container with CPU and memory requests and limits ("" leaves
// one out).
func sized(name, cpuReq, cpuLim, memLim string) v1.Container {
	c := ctr(name)
	c.Resources = v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if cpuReq != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpuReq)
	}
	if cpuLim != "" {
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse(cpuLim)
	}
	if memLim != "" {
		c.Resources.Limits[v1.ResourceMemory] = resource.MustParse(memLim)
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(memLim)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
