package agenttest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/memorymanager"
)

// The Static memory manager on a node of two NUMA nodes of 4Gi (100Mi
// reserved on node 0, the default hard eviction threshold): a Guaranteed
// pod's memory is pinned to one node (its container's cpuset_mems), a
// second one to the other node, both reported by the pod-resources API; a
// third that no node can hold is refused; a Burstable pod is not pinned;
// a pod that ends gives its memory back.
func TestStaticMemoryManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cpus, err := cpumanager.NewTopology(2, 1, 2, 1) // 2 NUMA nodes, as the memory
		require.NoError(t, err)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			Resources: agent.ResourceOptions{MemoryManagerPolicy: memorymanager.PolicyStatic, TopologyManagerPolicy: "single-numa-node",
				Topology: cpus, MemoryMachine: memorymanager.FakeMachine(2, 4<<30),
				ReservedMemory: []kubeletv1beta1.MemoryReservation{{NumaNode: 0, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")}}}}}})
		sized := func(name, memory string, guaranteed bool) *v1.Pod {
			c := container("app", "sleep", "3600")
			r := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse(memory)}
			c.Resources.Requests = r
			if guaranteed {
				c.Resources.Limits = r
			}
			return pod(name, c)
		}
		running := func(name string) bool { return n.Pod("default", name).Status.Phase == v1.PodRunning }

		a := n.AddPod(sized("a", "3Gi", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return running("a") }))
		b := n.AddPod(sized("b", "3Gi", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return running("b") }))
		nodeA, nodeB := runningResources(n, string(a.UID), "app").GetCpusetMems(), runningResources(n, string(b.UID), "app").GetCpusetMems()
		assert.ElementsMatch(t, []string{"0", "1"}, []string{nodeA, nodeB}, "one NUMA node each")

		got, err := n.Agent().PodResources().Get(context.Background(), &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "a"})
		require.NoError(t, err)
		mem := got.GetPodResources().GetContainers()[0].GetMemory()
		require.Len(t, mem, 1)
		assert.Equal(t, "memory", mem[0].GetMemoryType())
		assert.Equal(t, uint64(3<<30), mem[0].GetSize())

		n.AddPod(sized("c", "3Gi", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "c").Status.Phase != "" }))
		c := n.Pod("default", "c")
		assert.Equal(t, v1.PodFailed, c.Status.Phase)
		// As upstream: no node fits, so the memory manager gives no hint, the
		// topology manager admits with no preference, and Allocate refuses.
		assert.Equal(t, "UnexpectedAdmissionError", c.Status.Reason)
		assert.Equal(t, "Pod was rejected: Allocate failed due to [memorymanager] failed to get the default NUMA affinity, "+
			"no NUMA nodes with enough memory is available, which is unexpected", c.Status.Message)

		burst := n.AddPod(sized("burst", "1Gi", false))
		require.True(t, n.StepUntil(time.Minute, func() bool { return running("burst") }))
		assert.Empty(t, runningResources(n, string(burst.UID), "app").GetCpusetMems())

		// a ends: its node's memory comes back, so a new 3Gi pod fits there.
		n.DeletePod("default", "a")
		require.True(t, n.StepUntil(time.Minute, func() bool { return runningResources(n, string(a.UID), "app") == nil }))
		n.Step(10 * time.Second)
		d := n.AddPod(sized("d", "3Gi", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return running("d") }))
		assert.Equal(t, nodeA, runningResources(n, string(d.UID), "app").GetCpusetMems())
	})
}
