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

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
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

// Huge pages: on a node whose kernel offers 2Mi and 1Gi pages, each
// container's config limits both sizes, as upstream's: its own
// hugepages-2Mi limit, the pod's 1Gi for the container without one (pod-level
// resources), 0 for a size neither asks for.
func TestHugePageLimitsReachContainers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{Machine: nodetest.Machine{Cap: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
			"hugepages-2Mi": resource.MustParse("64Mi"), "hugepages-1Gi": resource.MustParse("2Gi"),
		}}}}})
		huge := func(size, amount string) v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi"),
				v1.ResourceName("hugepages-" + size): resource.MustParse(amount)}
		}
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dpdk"}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "busybox", Resources: v1.ResourceRequirements{Requests: huge("2Mi", "8Mi"), Limits: huge("2Mi", "8Mi")}}}}})
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pl"}, Spec: v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: huge("1Gi", "1Gi"), Limits: huge("1Gi", "1Gi")},
			Containers: []v1.Container{{Name: "bare", Image: "busybox"}}}})
		n.Step(30 * time.Second)
		require.Equal(t, v1.PodRunning, n.Pod("default", "dpdk").Status.Phase, "admitted against the node's huge pages")
		require.Equal(t, v1.PodRunning, n.Pod("default", "pl").Status.Phase)
		got := map[string][]*runtimeapi.HugepageLimit{}
		for _, c := range n.Runtime().CallsOf(fake.CreateContainer) {
			req := c.Request.(*runtimeapi.CreateContainerRequest)
			got[req.GetConfig().GetMetadata().GetName()] = req.GetConfig().GetLinux().GetResources().GetHugepageLimits()
		}
		assert.Equal(t, map[string][]*runtimeapi.HugepageLimit{
			"app":  {{PageSize: "1GB", Limit: 0}, {PageSize: "2MB", Limit: 8 << 20}},
			"bare": {{PageSize: "1GB", Limit: 1 << 30}, {PageSize: "2MB", Limit: 0}},
		}, got)
	})
}
