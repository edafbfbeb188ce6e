package agenttest_test

import (
	"os"
	"path/filepath"
	"strings"
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
	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func resizePod(name, cpu, memory string) *v1.Pod {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}}}}
}

func resizeTo(n *agenttest.Node, name, cpu, memory string) {
	p := n.Pod("default", name).DeepCopy()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	p.Generation++
	n.UpdatePod(p)
}

func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func eventReasons(n *agenttest.Node, prefix string) []string {
	var out []string
	for _, e := range n.Events() {
		if strings.HasPrefix(e.Reason, prefix) {
			out = append(out, e.Reason)
		}
	}
	return out
}

// An in-place resize, as upstream v1.36 reports one: accepted, the
// container is updated without a restart, allocatedResources and resources
// follow, PodResizeInProgress comes and goes with ResizeStarted and
// ResizeCompleted.
func TestInPlaceResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(resizePod("web", "500m", "256Mi"))
		n.Step(5 * time.Second)
		p := n.Pod("default", "web")
		require.Equal(t, v1.PodRunning, p.Status.Phase)
		cs := p.Status.ContainerStatuses[0]
		assert.Equal(t, "500m", cs.AllocatedResources.Cpu().String())
		require.NotNil(t, cs.Resources)
		assert.Equal(t, "500m", cs.Resources.Limits.Cpu().String())
		id := cs.ContainerID

		resizeTo(n, "web", "1", "512Mi")
		n.Step(5 * time.Second)
		p = n.Pod("default", "web")
		cs = p.Status.ContainerStatuses[0]
		assert.Equal(t, p.Generation, p.Status.ObservedGeneration)
		assert.Equal(t, id, cs.ContainerID, "resized in place, not restarted")
		assert.Zero(t, cs.RestartCount)
		assert.Equal(t, "1", cs.AllocatedResources.Cpu().String())
		assert.Equal(t, "512Mi", cs.AllocatedResources.Memory().String())
		assert.Equal(t, "1", cs.Resources.Limits.Cpu().String())
		assert.Equal(t, "1", cs.Resources.Requests.Cpu().String())
		assert.Equal(t, "512Mi", cs.Resources.Limits.Memory().String())
		assert.Nil(t, condition(p, v1.PodResizePending))
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		assert.Equal(t, []string{allocation.EventResizeStarted, allocation.EventResizeCompleted}, eventReasons(n, "Resize"))
		require.NotEmpty(t, n.Runtime().CallsOf(fake.UpdateContainerResources))
		got := n.Runtime().CallsOf(fake.UpdateContainerResources)
		last := got[len(got)-1].Request.(*runtimeapi.UpdateContainerResourcesRequest)
		assert.Equal(t, int64(512<<20), last.GetLinux().GetMemoryLimitInBytes())
		assert.Equal(t, int64(100000), last.GetLinux().GetCpuQuota())
	})
}

// A resize beyond the node's allocatable is Infeasible and one that does
// not fit beside the other pods Deferred, with upstream's messages; the
// deferred one is accepted once the pod in the way leaves.
func TestResizeInfeasibleAndDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(resizePod("a", "1", "256Mi"))
		n.AddPod(resizePod("b", "2", "256Mi"))
		n.Step(5 * time.Second)

		resizeTo(n, "a", "5", "256Mi") // the node has 4 CPUs
		n.Step(2 * time.Second)
		c := condition(n.Pod("default", "a"), v1.PodResizePending)
		require.NotNil(t, c)
		assert.Equal(t, v1.PodReasonInfeasible, c.Reason)
		assert.Equal(t, "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000", c.Message)
		assert.Equal(t, "1", n.Pod("default", "a").Status.ContainerStatuses[0].AllocatedResources.Cpu().String())

		resizeTo(n, "a", "3", "256Mi") // 3 + 2 > 4
		n.Step(2 * time.Second)
		c = condition(n.Pod("default", "a"), v1.PodResizePending)
		require.NotNil(t, c)
		assert.Equal(t, v1.PodReasonDeferred, c.Reason)
		assert.Equal(t, "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000", c.Message)
		assert.Equal(t, []string{allocation.EventResizeInfeasible, allocation.EventResizeDeferred}, eventReasons(n, "Resize"))

		n.DeletePod("default", "b")
		n.Step(10 * time.Second)
		p := n.Pod("default", "a")
		assert.Nil(t, condition(p, v1.PodResizePending))
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		assert.Equal(t, "3", p.Status.ContainerStatuses[0].Resources.Limits.Cpu().String())
	})
}

// A container whose resizePolicy asks for a restart for memory is
// restarted to take a new memory limit.
func TestResizeRestartContainerPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		pod := resizePod("web", "500m", "256Mi")
		pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
		n.AddPod(pod)
		n.Step(5 * time.Second)
		resizeTo(n, "web", "500m", "512Mi")
		n.Step(5 * time.Second)
		cs := n.Pod("default", "web").Status.ContainerStatuses[0]
		assert.Equal(t, int32(1), cs.RestartCount)
		assert.NotNil(t, cs.State.Running)
		assert.Equal(t, "512Mi", cs.Resources.Limits.Memory().String())
		assert.Empty(t, n.Runtime().CallsOf(fake.UpdateContainerResources))
	})
}

// A runtime that refuses the update leaves PodResizeInProgress with reason
// Error and the runtime's message; the next sync succeeds and clears it.
func TestResizeError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(resizePod("web", "500m", "256Mi"))
		n.Step(5 * time.Second)
		n.Runtime().InjectFault(fake.UpdateContainerResources, fake.Fault{Err: assert.AnError, Times: 1})
		resizeTo(n, "web", "1", "256Mi")
		n.Step(500 * time.Millisecond)
		c := condition(n.Pod("default", "web"), v1.PodResizeInProgress)
		require.NotNil(t, c)
		assert.Equal(t, v1.PodReasonError, c.Reason)
		assert.Contains(t, c.Message, "container app: update cpu")
		n.Step(20 * time.Second)
		p := n.Pod("default", "web")
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		assert.Equal(t, "1", p.Status.ContainerStatuses[0].Resources.Limits.Cpu().String())
		assert.Contains(t, eventReasons(n, "Resize"), allocation.EventResizeError)
	})
}

// The allocation is checkpointed under the root directory, for a
// restarted agent to run its pods as it had admitted them, and forgotten
// with its pod.
func TestResizeAllocationCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})
		n.AddPod(resizePod("web", "500m", "256Mi"))
		n.Step(5 * time.Second)
		b, err := os.ReadFile(filepath.Join(root, allocation.CheckpointFile))
		require.NoError(t, err)
		assert.Contains(t, string(b), `"cpu":"500m"`)
		n.DeletePod("default", "web")
		n.Step(time.Minute)
		b, err = os.ReadFile(filepath.Join(root, allocation.CheckpointFile))
		require.NoError(t, err)
		assert.NotContains(t, string(b), "500m", "a pod gone is forgotten")
	})
}

// A regular init container is resized in place while it runs, as upstream
// v1.36 does under InPlacePodVerticalScalingInitContainers (beta, on by
// default) and its e2e spec "should support resizing a non-sidecar init
// container" checks: the resize is allocated, the running container is
// updated without a restart, its status's allocatedResources and
// resources follow, and back again. The node declares the feature, without
// which the API server refuses such a resize.
func TestInPlaceResizeInitContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		st, ok := n.Agent().NodeStatus()
		require.True(t, ok)
		assert.Contains(t, st.DeclaredFeatures, "InPlacePodVerticalScalingInitContainers")
		assert.Contains(t, st.DeclaredFeatures, "InPlacePodLevelResourcesVerticalScaling")

		rl := func(cpu, memory string) v1.ResourceRequirements {
			l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
			return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
		}
		pod := resizePod("init", "100m", "64Mi")
		// A command that never exits, to resize the init container while it
		// runs (the fake runtime runs it until it is stopped).
		pod.Spec.InitContainers = []v1.Container{{Name: "init-c1", Image: "busybox", Command: []string{"tail", "-f", "/dev/null"},
			Resources: rl("100m", "64Mi")}}
		n.AddPod(pod)
		n.Step(5 * time.Second)
		p := n.Pod("default", "init")
		require.Len(t, p.Status.InitContainerStatuses, 1)
		ics := p.Status.InitContainerStatuses[0]
		require.NotNil(t, ics.State.Running)
		id := ics.ContainerID

		for _, want := range []struct{ cpu, memory string }{{"200m", "128Mi"}, {"100m", "64Mi"}} {
			p = n.Pod("default", "init").DeepCopy()
			p.Spec.InitContainers[0].Resources = rl(want.cpu, want.memory)
			p.Generation++
			n.UpdatePod(p)
			n.Step(5 * time.Second)
			p = n.Pod("default", "init")
			ics = p.Status.InitContainerStatuses[0]
			assert.Equal(t, id, ics.ContainerID, "resized in place, not restarted")
			assert.NotNil(t, ics.State.Running)
			assert.Zero(t, ics.RestartCount)
			assert.Equal(t, want.cpu, ics.AllocatedResources.Cpu().String())
			assert.Equal(t, want.memory, ics.AllocatedResources.Memory().String())
			if assert.NotNil(t, ics.Resources) {
				assert.Equal(t, want.cpu, ics.Resources.Limits.Cpu().String())
				assert.Equal(t, want.cpu, ics.Resources.Requests.Cpu().String())
				assert.Equal(t, want.memory, ics.Resources.Limits.Memory().String())
			}
			assert.Nil(t, condition(p, v1.PodResizePending))
			assert.Nil(t, condition(p, v1.PodResizeInProgress))
			assert.Empty(t, p.Status.ContainerStatuses[0].ContainerID, "the app container waits for init")
		}
		assert.Equal(t, []string{allocation.EventResizeStarted, allocation.EventResizeCompleted,
			allocation.EventResizeStarted, allocation.EventResizeCompleted}, eventReasons(n, "Resize"))
		got := n.Runtime().CallsOf(fake.UpdateContainerResources)
		require.NotEmpty(t, got)
		last := got[len(got)-1].Request.(*runtimeapi.UpdateContainerResourcesRequest)
		assert.Equal(t, int64(64<<20), last.GetLinux().GetMemoryLimitInBytes())
		assert.Equal(t, int64(10000), last.GetLinux().GetCpuQuota())
	})
}

// The updates that need node features (upstream's InferForPodUpdate: a
// resize of a regular init container, InPlacePodVerticalScalingInitContainers;
// a resize of pod-level resources, InPlacePodLevelResourcesVerticalScaling)
// need only features the node declares: neither gets upstream kubelet's
// Warning event FailedNodeDeclaredFeaturesCheck.
func TestUpdateNeedingDeclaredFeatures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		pod := resizePod("web", "500m", "256Mi")
		pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}
		n.AddPod(pod)
		n.Step(5 * time.Second)

		p := n.Pod("default", "web").DeepCopy()
		p.Spec.InitContainers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200m")
		p.Generation++
		n.UpdatePod(p)
		n.Step(time.Second)
		assert.Empty(t, eventReasons(n, agent.EventFailedNodeDeclaredFeaturesCheck))

		p = n.Pod("default", "web").DeepCopy()
		p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
		p.Generation++
		n.UpdatePod(p)
		n.Step(time.Second)
		assert.Empty(t, eventReasons(n, agent.EventFailedNodeDeclaredFeaturesCheck))
	})
}
