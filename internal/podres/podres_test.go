package podres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/internal/podres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctr(cpu string, sidecar bool) v1.Container {
	c := v1.Container{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c
}

func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		name       string
		init, main []v1.Container
		want       string
		needs      int
	}{
		{"containers add up", nil, []v1.Container{ctr("100m", false), ctr("200m", false)}, "300m", 2},
		{"a larger init container wins", []v1.Container{ctr("1", false)}, []v1.Container{ctr("100m", false)}, "1", 2},
		{"sidecars add up and count in a later init container's need",
			[]v1.Container{ctr("200m", true), ctr("500m", false)}, []v1.Container{ctr("100m", false)}, "700m", 3},
		{"a sidecar after the init container does not", []v1.Container{ctr("500m", false), ctr("200m", true)},
			[]v1.Container{ctr("100m", false)}, "500m", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.main}}
			needs := 0
			got := podres.Effective(pod, podres.Requests, func(v1.ResourceList) { needs++ })
			cpu := got[v1.ResourceCPU]
			assert.Equal(t, tc.want, cpu.String())
			assert.Equal(t, tc.needs, needs)
		})
	}
	assert.True(t, podres.PodLevel("hugepages-2Mi"))
	assert.False(t, podres.PodLevel(v1.ResourceEphemeralStorage))
}
