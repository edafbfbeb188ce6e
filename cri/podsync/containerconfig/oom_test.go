package containerconfig_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func TestOOMScoreAdj(t *testing.T) {
	const gi = int64(1 << 30)
	critical := int32(2000001000)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		c    int // index in Containers, -1 for the first init container
		want int64
	}{
		{"guaranteed", newPod("", nil, sized("app", "100m", "100m", "64Mi")), 0, -997},
		{"besteffort", newPod("", nil, ctr("app")), 0, 1000},
		{"burstable: its share of memory", newPod("", nil, withMem(sized("app", "100m", "", ""), "1Gi")), 0, 1000 - 1000/8},
		{"burstable without a memory request", newPod("", nil, sized("app", "100m", "", "")), 0, 999},
		{"burstable asking for more than the node", newPod("", nil, withMem(sized("app", "100m", "", ""), "16Gi")), 0, 3},
		{"a sidecar no higher than the app", newPod("", []v1.Container{sidecarOf(withMem(sized("proxy", "100m", "", ""), "64Mi"))},
			withMem(sized("app", "100m", "", ""), "4Gi")), -1, 500},
		{"a pod-level request shared out", podLevel(newPod("", nil, withMem(sized("app", "100m", "", ""), "1Gi")), v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}, nil),
			0, 1000 - 1000*2/8},
		{"a pod-level request shared out, a sidecar", podLevel(newPod("", []v1.Container{sidecarOf(withMem(sized("proxy", "100m", "", ""), "64Mi"))},
			sized("app", "100m", "", "")), v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}, nil), -1, 872},
		{"pod-level CPU only: nothing shared", podLevel(newPod("", nil, withMem(sized("app", "100m", "", ""), "1Gi")), v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, nil),
			0, 1000 - 1000/8},
		{"node critical", func() *v1.Pod {
			p := newPod("", nil, ctr("app"))
			p.Spec.Priority, p.Spec.PriorityClassName = &critical, "system-node-critical"
			return p
		}(), 0, -997},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &tc.pod.Spec.Containers[0]
			if tc.c < 0 {
				c = &tc.pod.Spec.InitContainers[0]
			}
			assert.Equal(t, tc.want, containerconfig.OOMScoreAdj(tc.pod, c, 8*gi))
		})
	}
}

// podLevel gives pod pod-level requests and limits (spec.resources).
func podLevel(pod *v1.Pod, requests, limits v1.ResourceList) *v1.Pod {
	pod.Spec.Resources = &v1.ResourceRequirements{Requests: requests, Limits: limits}
	return pod
}

func withMem(c v1.Container, request string) v1.Container {
	c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(request)
	return c
}

func sidecarOf(c v1.Container) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}
