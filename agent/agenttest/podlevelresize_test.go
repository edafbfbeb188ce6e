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

// podLevelRequirements are pod-level requests and the same limits.
func podLevelRequirements(cpu, memory string) *v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	return &v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// resizePodLevelTo asks the pod default/name's pod-level resources to
// change (generation+1), then steps the node 5s.
func resizePodLevelTo(n *agenttest.Node, name, cpu, memory string) {
	p := n.Pod("default", name).DeepCopy()
	p.Spec.Resources = podLevelRequirements(cpu, memory)
	p.Generation++
	n.UpdatePod(p)
	n.Step(5 * time.Second)
}

// An in-place resize of pod-level resources (upstream's
// InPlacePodLevelResourcesVerticalScaling, beta and on by default in
// 1.36), on a node with pod cgroups in a directory shaped as a cgroup v2
// mount: the node declares the feature; a Guaranteed pod whose container
// sets no resources of its own is resized from cpu=500m memory=256Mi to
// cpu=1 memory=512Mi; the resize is allocated, the pod's cgroup gets the
// new CPU quota and weight and memory limit, the container follows the
// pod's limits in place, status.allocatedResources and status.resources
// report it, and PodResizeInProgress comes and goes with ResizeStarted and
// ResizeCompleted. Then a memory limit below what the pod's cgroup uses
// is refused as upstream's: PodResizeInProgress with reason Error, the
// cgroup left as it was.
func TestInPlacePodLevelResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := cgroupV2FS(t)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs}}})
		st, ok := n.Agent().NodeStatus()
		require.True(t, ok)
		assert.Contains(t, st.DeclaredFeatures, "InPlacePodLevelResourcesVerticalScaling")

		p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plr"}, Spec: v1.PodSpec{
			Resources:  podLevelRequirements("500m", "256Mi"),
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
		waitRunning(t, n, "plr")
		dir := filepath.Join(fs, "kubepods", "pod"+string(p.UID)) // Guaranteed
		file := func(name string) string {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			return strings.TrimSpace(string(b))
		}
		assert.Equal(t, "50000 100000", file("cpu.max"))
		assert.Equal(t, "268435456", file("memory.max"))
		p = n.Pod("default", "plr")
		assert.Equal(t, "500m", p.Status.AllocatedResources.Cpu().String())
		require.NotNil(t, p.Status.Resources)
		assert.Equal(t, "256Mi", p.Status.Resources.Limits.Memory().String())
		id := p.Status.ContainerStatuses[0].ContainerID

		resizePodLevelTo(n, "plr", "1", "512Mi")

		p = n.Pod("default", "plr")
		assert.Equal(t, p.Generation, p.Status.ObservedGeneration)
		assert.Nil(t, condition(p, v1.PodResizePending))
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		assert.Equal(t, []string{allocation.EventResizeStarted, allocation.EventResizeCompleted}, eventReasons(n, "Resize"))
		assert.Equal(t, "100000 100000", file("cpu.max"))
		assert.Equal(t, "536870912", file("memory.max"))
		assert.Equal(t, "39", file("cpu.weight"), "1024 shares")
		assert.Equal(t, "1", p.Status.AllocatedResources.Cpu().String())
		assert.Equal(t, "512Mi", p.Status.AllocatedResources.Memory().String())
		require.NotNil(t, p.Status.Resources)
		assert.Equal(t, "1", p.Status.Resources.Limits.Cpu().String())
		assert.Equal(t, "512Mi", p.Status.Resources.Limits.Memory().String())
		// As upstream's: a cgroup keeps no memory request, and the one a
		// running pod's previous status showed stands.
		assert.Equal(t, "256Mi", p.Status.Resources.Requests.Memory().String())
		assert.Equal(t, "975m", p.Status.Resources.Requests.Cpu().String(), "1 CPU's weight, read as upstream reads it")
		cs := p.Status.ContainerStatuses[0]
		assert.Equal(t, id, cs.ContainerID, "resized in place, not restarted")
		assert.Zero(t, cs.RestartCount)
		updates := n.Runtime().CallsOf(fake.UpdateContainerResources)
		require.NotEmpty(t, updates, "the container follows the pod's limits")
		last := updates[len(updates)-1].Request.(*runtimeapi.UpdateContainerResourcesRequest)
		assert.Equal(t, int64(512<<20), last.GetLinux().GetMemoryLimitInBytes())
		assert.Equal(t, int64(100000), last.GetLinux().GetCpuQuota())

		// The pod uses 300Mi: a memory limit of 256Mi is refused.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.current"), []byte("314572800\n"), 0o644))
		resizePodLevelTo(n, "plr", "1", "256Mi")
		p = n.Pod("default", "plr")
		c := condition(p, v1.PodResizeInProgress)
		require.NotNil(t, c)
		assert.Equal(t, v1.PodReasonError, c.Reason)
		assert.Contains(t, c.Message, "attempting to set pod memory limit (268435456) below current usage (314572800)")
		assert.Equal(t, "536870912", file("memory.max"))
		assert.Equal(t, "512Mi", p.Status.Resources.Limits.Memory().String(), "the cgroup's")
		assert.Equal(t, "256Mi", p.Status.AllocatedResources.Memory().String(), "allocated")
	})
}

// A pod-level memory resize of a pod whose container sets no limits of its
// own and asks RestartContainer for memory: the container restarts with
// the pod's new limit after the pod's cgroup took it, and the resize
// completes.
func TestInPlacePodLevelResizeRestartContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := cgroupV2FS(t)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs}}})
		p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plr"}, Spec: v1.PodSpec{
			Resources: podLevelRequirements("500m", "256Mi"),
			Containers: []v1.Container{{Name: "app", Image: "busybox",
				ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}}}}})
		waitRunning(t, n, "plr")
		id := n.Pod("default", "plr").Status.ContainerStatuses[0].ContainerID

		resizePodLevelTo(n, "plr", "500m", "512Mi")
		p = n.Pod("default", "plr")
		cs := p.Status.ContainerStatuses[0]
		assert.NotEqual(t, id, cs.ContainerID, "restarted for its resize")
		assert.Equal(t, int32(1), cs.RestartCount)
		assert.NotNil(t, cs.State.Running)
		b, err := os.ReadFile(filepath.Join(fs, "kubepods", "pod"+string(p.UID), "memory.max"))
		require.NoError(t, err)
		assert.Equal(t, "536870912", strings.TrimSpace(string(b)))
		assert.Nil(t, condition(p, v1.PodResizeInProgress))
		assert.Equal(t, []string{allocation.EventResizeStarted, allocation.EventResizeCompleted}, eventReasons(n, "Resize"))
		creates := n.Runtime().CallsOf(fake.CreateContainer)
		last := creates[len(creates)-1].Request.(*runtimeapi.CreateContainerRequest)
		assert.Equal(t, int64(512<<20), last.GetConfig().GetLinux().GetResources().GetMemoryLimitInBytes())
	})
}
