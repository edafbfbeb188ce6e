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
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cpumanager"
)

// cpuNode is a node of 4 CPUs (2 cores of 2 threads: siblings 0,2 and
// 1,3) under the static CPU manager, with one CPU reserved (CPU 0).
func cpuNode(t *testing.T, root string, topologyPolicy string) *agenttest.Node {
	machine, err := cpumanager.NewTopology(1, 2, 2, 1)
	require.NoError(t, err)
	return agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root,
		Node:      agent.NodeOptions{KubeReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		Resources: agent.ResourceOptions{CPUManagerPolicy: cpumanager.PolicyStatic, TopologyManagerPolicy: topologyPolicy, Topology: machine}}})
}

func sizedPod(name, cpu string, guaranteed bool) *v1.Pod {
	c := container("app", "sleep", "3600")
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
	c.Resources.Requests = req
	if guaranteed {
		c.Resources.Limits = req
	}
	return pod(name, c)
}

// runningResources is the Linux resources the runtime holds for a pod's
// running container.
func runningResources(n *agenttest.Node, uid, name string) *runtimeapi.LinuxContainerResources {
	for _, c := range n.Runtime().Containers() {
		if c.GetLabels()["io.kubernetes.pod.uid"] == uid && c.GetMetadata().GetName() == name && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c.GetResources().GetLinux()
		}
	}
	return nil
}

// The static CPU manager on a whole node: a Guaranteed pod's container runs
// on a whole core of its own without a CFS quota; a Burstable one on the
// shared pool, which shrinks and grows as exclusive CPUs are taken and
// released; a pod that does not fit is refused with upstream's reason;
// the pod-resources API reports the CPUs; and a restart keeps them.
func TestStaticCPUManager(t *testing.T) {
	root := t.TempDir()
	var dbUID string
	t.Run("first run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := cpuNode(t, root, "")
			web := n.AddPod(sizedPod("web", "500m", false))
			require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }))
			assert.Equal(t, "0-3", runningResources(n, string(web.UID), "app").GetCpusetCpus(), "the whole machine is the shared pool")

			db := n.AddPod(sizedPod("db", "2", true))
			dbUID = string(db.UID)
			require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "db").Status.Phase == v1.PodRunning }))
			r := runningResources(n, dbUID, "app")
			assert.Equal(t, "1,3", r.GetCpusetCpus(), "a whole core")
			assert.Equal(t, int64(-1), r.GetCpuQuota(), "no CFS quota with exclusive CPUs")
			n.Step(10 * time.Second) // the reconcile period
			assert.Equal(t, "0,2", runningResources(n, string(web.UID), "app").GetCpusetCpus(), "the shared pool without the core")

			list, err := n.Agent().PodResources().Get(context.Background(), &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "db"})
			require.NoError(t, err)
			assert.Equal(t, []int64{1, 3}, list.GetPodResources().GetContainers()[0].GetCpuIds())
			alloc, err := n.Agent().PodResources().GetAllocatableResources(context.Background(), &api.AllocatableResourcesRequest{})
			require.NoError(t, err)
			assert.Equal(t, []int64{1, 2, 3}, alloc.GetCpuIds(), "every CPU but the reserved one")

			// One CPU is left beside the reserved one: 2 do not fit.
			n.AddPod(sizedPod("big", "2", true))
			require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "big").Status.Phase != "" }))
			big := n.Pod("default", "big")
			assert.Equal(t, v1.PodFailed, big.Status.Phase)
			assert.Equal(t, "UnexpectedAdmissionError", big.Status.Reason)
			assert.Equal(t, "Pod was rejected: Allocate failed due to not enough cpus available to satisfy request: requested=2, available=1, which is unexpected", big.Status.Message)
		})
	})
	t.Run("after a restart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The checkpoint holds db's core: a new container starts on the
			// pool db left, before any reconcile.
			n := cpuNode(t, root, "")
			web2 := n.AddPod(sizedPod("web2", "500m", false))
			require.True(t, n.StepUntil(5*time.Second, func() bool { return n.Pod("default", "web2").Status.Phase == v1.PodRunning }))
			assert.Equal(t, "0,2", runningResources(n, string(web2.UID), "app").GetCpusetCpus())
			// db comes back (its API server sends it again): the same core.
			db := sizedPod("db", "2", true)
			db.UID = types.UID(dbUID)
			n.AddPod(db)
			require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "db").Status.Phase == v1.PodRunning }))
			assert.Equal(t, "1,3", runningResources(n, dbUID, "app").GetCpusetCpus())
			// db deleted: its core goes back to the pool at the next
			// reconcile once the pod has ended.
			n.DeletePod("default", "db")
			require.True(t, n.StepUntil(time.Minute, func() bool { return runningResources(n, dbUID, "app") == nil }))
			n.Step(10 * time.Second)
			assert.Equal(t, "0-3", runningResources(n, string(web2.UID), "app").GetCpusetCpus())
		})
	})
}

// Under the topology manager's single-numa-node policy on one NUMA node,
// what fits is admitted as under the CPU manager alone, and what does not
// fit is refused by the CPU manager's hints: TopologyAffinityError.
func TestTopologyManagerRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := cpuNode(t, t.TempDir(), "single-numa-node")
		n.AddPod(sizedPod("db", "2", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "db").Status.Phase == v1.PodRunning }))
		n.AddPod(sizedPod("big", "2", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "big").Status.Phase != "" }))
		big := n.Pod("default", "big")
		assert.Equal(t, v1.PodFailed, big.Status.Phase)
		assert.Equal(t, "TopologyAffinityError", big.Status.Reason)
		assert.Equal(t, "Pod was rejected: Resources cannot be allocated with Topology locality", big.Status.Message)
	})
}

// A Guaranteed pod's CPU resize under the static policy is Infeasible, with
// upstream's condition message; its exclusive CPUs stay.
func TestStaticCPUManagerRefusesCPUResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := cpuNode(t, t.TempDir(), "")
		db := n.AddPod(sizedPod("db", "1", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "db").Status.Phase == v1.PodRunning }))
		// One CPU: the free thread of the core the reserved CPU 0 splits.
		assert.Equal(t, "2", runningResources(n, string(db.UID), "app").GetCpusetCpus())
		bigger := n.Pod("default", "db").DeepCopy()
		two := resource.MustParse("2")
		bigger.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = two
		bigger.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = two
		n.UpdatePod(bigger)
		var cond *v1.PodCondition
		require.True(t, n.StepUntil(time.Minute, func() bool {
			for _, c := range n.Pod("default", "db").Status.Conditions {
				if c.Type == v1.PodResizePending {
					cond = &c
					return true
				}
			}
			return false
		}))
		assert.Equal(t, v1.PodReasonInfeasible, cond.Reason)
		assert.Equal(t, `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`, cond.Message)
		assert.Equal(t, "2", runningResources(n, string(db.UID), "app").GetCpusetCpus())
	})
}
