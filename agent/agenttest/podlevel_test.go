package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Pod-level resources (PodLevelResources, beta and on since 1.34): a
// container that sets no limit of its own runs with the pod's CPU and
// memory limits, its shares from the pod's CPU limit; one with its own
// memory limit keeps it. The pod then runs steadily: no resize is ever
// attempted (the runtime reports what the node asked).
func TestPodLevelLimitsReachContainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pl"}, Spec: v1.PodSpec{
			Resources: &v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi")},
			},
			Containers: []v1.Container{
				{Name: "bare", Image: "busybox"},
				{Name: "own", Image: "busybox", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}},
			}}}
		n.AddPod(pod)
		n.Step(30 * time.Second)
		p := n.Pod("default", "pl")
		require.Equal(t, v1.PodRunning, p.Status.Phase)
		got := map[string]*runtimeapi.LinuxContainerResources{}
		for _, c := range n.Runtime().CallsOf(fake.CreateContainer) {
			req := c.Request.(*runtimeapi.CreateContainerRequest)
			got[req.GetConfig().GetMetadata().GetName()] = req.GetConfig().GetLinux().GetResources()
		}
		require.Len(t, got, 2)
		assert.Equal(t, int64(256<<20), got["bare"].GetMemoryLimitInBytes())
		assert.Equal(t, int64(100000), got["bare"].GetCpuQuota())
		assert.Equal(t, int64(1024), got["bare"].GetCpuShares(), "shares from the pod's CPU limit")
		assert.Equal(t, int64(64<<20), got["own"].GetMemoryLimitInBytes())
		assert.Equal(t, int64(100000), got["own"].GetCpuQuota())
		assert.Empty(t, n.Runtime().CallsOf(fake.UpdateContainerResources), "nothing to resize")
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		for _, cs := range p.Status.ContainerStatuses {
			assert.Zero(t, cs.RestartCount, cs.Name)
		}
	})
}
