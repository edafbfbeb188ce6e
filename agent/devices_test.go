package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

const gpuPod = `apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: default, uid: NAME-uid}
spec:
  containers:
  - name: train
    image: busybox
    resources:
      limits: {example.com/gpu: "1"}
`

// devicePluginDir is a directory short enough for the sockets in it.
func devicePluginDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kkdp")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitResource polls the node's status until the resource has the capacity and
// allocatable.
func (n *node) waitResource(name v1.ResourceName, capacity, allocatable int64) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last v1.NodeStatus
	for time.Now().Before(deadline) {
		st, ok := n.a.NodeStatus()
		c, a := st.Capacity[name], st.Allocatable[name]
		if ok && c.Value() == capacity && a.Value() == allocatable {
			return
		}
		last = st
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	n.t.Fatalf("%s: want capacity %d allocatable %d; last capacity %v allocatable %v", name, capacity, allocatable, last.Capacity, last.Allocatable)
}

// A device plugin registers with the agent: its resource joins the node's
// capacity, a pod asking for a device runs with what the plugin answered
// in its container's config, a second pod finds none left and is refused
// as upstream refuses it, and a restarted agent keeps the first pod's
// device.
func TestDevicePlugins(t *testing.T) {
	dir := t.TempDir()
	manifests, root, plugins := filepath.Join(dir, "manifests"), filepath.Join(dir, "root"), devicePluginDir(t)
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	opts := agent.Options{Runtime: rt, RootDir: root, Sources: agent.SourceOptions{ManifestPath: manifests}, Node: agent.NodeOptions{DevicePluginDir: plugins}}

	first := startNodeWith(t, opts)
	plugin := devicestest.New("example.com/gpu", devicestest.Healthy("gpu0")...)
	t.Cleanup(plugin.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, plugin.StartAndRegister(ctx, filepath.Join(plugins, devices.SocketName)))
	first.waitResource("example.com/gpu", 1, 1)

	first.write("a.yaml", strings.ReplaceAll(gpuPod, "NAME", "a"))
	first.waitPod("a-node1", "Running", isRunning)
	env := createdEnv(t, rt, "a-uid")
	assert.Equal(t, "gpu0", env[devicestest.DefaultEnv], "the plugin's answer reaches the container")
	first.waitPod("a-node1", "its device Healthy in its status", deviceHealth("gpu0", v1.ResourceHealthStatusHealthy))

	// A device turning unhealthy shows in the pod's status; the pod runs
	// on, and the node has nothing left to allocate.
	plugin.SetDevices(devicestest.Unhealthy("gpu0")...)
	first.waitPod("a-node1", "its device Unhealthy in its status", deviceHealth("gpu0", v1.ResourceHealthStatusUnhealthy))
	first.waitResource("example.com/gpu", 1, 0)
	plugin.SetDevices(devicestest.Healthy("gpu0")...)
	first.waitResource("example.com/gpu", 1, 1)
	first.waitPod("a-node1", "Running", isRunning)

	first.write("b.yaml", strings.ReplaceAll(gpuPod, "NAME", "b"))
	b := first.waitPod("b-node1", "refused", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	assert.Equal(t, devices.ReasonUnexpectedAdmissionError, b.Status.Reason)
	assert.Equal(t, "Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 1, Available: 0, which is unexpected", b.Status.Message)

	first.stop()
	plugin.Stop()
	second := startNodeWith(t, opts)
	second.waitPod("a-node1", "Running", isRunning)
	require.NoError(t, plugin.StartAndRegister(ctx, filepath.Join(plugins, devices.SocketName)), "a plugin registers again with a new kubelet")
	second.waitResource("example.com/gpu", 1, 1)
	second.write("c.yaml", strings.ReplaceAll(gpuPod, "NAME", "c"))
	c := second.waitPod("c-node1", "refused", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	assert.Contains(t, c.Status.Message, "Available: 0", "the checkpoint kept a's device")
	second.waitPod("a-node1", "Running", isRunning)
}

// createdEnv is the environment of the last container created for a pod.
func createdEnv(t *testing.T, rt *fake.Runtime, uid string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, c := range rt.CallsOf(fake.CreateContainer) {
		req := c.Request.(*runtimeapi.CreateContainerRequest)
		if req.GetSandboxConfig().GetMetadata().GetUid() != uid {
			continue
		}
		for _, kv := range req.GetConfig().GetEnvs() {
			env[kv.GetKey()] = string(kv.GetValue())
		}
	}
	return env
}

// deviceHealth: the pod's first container reports the device's health in
// allocatedResourcesStatus.
func deviceHealth(id string, h v1.ResourceHealthStatus) func(v1.Pod) bool {
	return func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		want := []v1.ResourceStatus{{Name: "example.com/gpu", Resources: []v1.ResourceHealth{{ResourceID: v1.ResourceID(id), Health: h}}}}
		return equality.Semantic.DeepEqual(want, p.Status.ContainerStatuses[0].AllocatedResourcesStatus)
	}
}

const gpuCPUPod = `apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: default, uid: NAME-uid}
spec:
  containers:
  - name: train
    image: busybox
    resources:
      limits: {example.com/gpu: "1", cpu: "1", memory: 64Mi}
`

// numaGPUNode starts a node on a machine of two NUMA nodes (CPUs 0,2 on
// node 0; 1,3 on node 1) under the static CPU manager and the
// single-numa-node topology policy, one CPU reserved by KubeReserved (or
// the reserved set given), with a device plugin of example.com/gpu serving
// devs, registered and counted.
func numaGPUNode(t *testing.T, reserved cpuset.CPUSet, devs ...*pluginapi.Device) (*node, *fake.Runtime) {
	t.Helper()
	dir := t.TempDir()
	manifests, root, plugins := filepath.Join(dir, "manifests"), filepath.Join(dir, "root"), devicePluginDir(t)
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	machine, err := cpumanager.NewTopology(2, 1, 2, 1)
	require.NoError(t, err)
	n := startNodeWith(t, agent.Options{Runtime: rt, RootDir: root, Sources: agent.SourceOptions{ManifestPath: manifests},
		Node: agent.NodeOptions{DevicePluginDir: plugins, KubeReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		Resources: agent.ResourceOptions{CPUManagerPolicy: "static", TopologyManagerPolicy: "single-numa-node", Topology: machine,
			ReservedSystemCPUs: reserved}})
	plugin := devicestest.New("example.com/gpu", devs...)
	t.Cleanup(plugin.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, plugin.StartAndRegister(ctx, filepath.Join(plugins, devices.SocketName)))
	n.waitResource("example.com/gpu", int64(len(devs)), int64(len(devs)))
	return n, rt
}

// gpuOnNode is a healthy device on one NUMA node.
func gpuOnNode(id string, numa int64) *pluginapi.Device {
	return &pluginapi.Device{ID: id, Health: pluginapi.Healthy, Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: numa}}}}
}

// createdCPUs is the cpuset the runtime was asked to create the pod's
// container with.
func createdCPUs(rt *fake.Runtime, uid string) string {
	var cpus string
	for _, c := range rt.CallsOf(fake.CreateContainer) {
		if req := c.Request.(*runtimeapi.CreateContainerRequest); req.GetSandboxConfig().GetMetadata().GetUid() == uid {
			cpus = req.GetConfig().GetLinux().GetResources().GetCpusetCpus()
		}
	}
	return cpus
}

// A device's NUMA node steers the CPU manager: on a machine of two NUMA
// nodes (CPUs 0,2 on node 0; 1,3 on node 1) whose only device sits on node
// 1, a Guaranteed pod asking for the device and one CPU gets a CPU of node
// 1 under the single-numa-node policy.
func TestDeviceTopologyAlignsCPUs(t *testing.T) {
	n, rt := numaGPUNode(t, cpuset.CPUSet{}, gpuOnNode("gpu1", 1))
	n.write("a.yaml", strings.ReplaceAll(gpuCPUPod, "NAME", "a"))
	n.waitPod("a-node1", "Running", isRunning)
	assert.Contains(t, []string{"1", "3"}, createdCPUs(rt, "a-uid"), "a CPU of node 1, beside the device")
}

// The devices are chosen with the topology manager's merged affinity, as
// upstream chooses them: on a machine of two NUMA nodes (CPUs 0,2 on node
// 0; 1,3 on node 1) whose node 0 CPUs are all reserved, with a free device
// on each node, a Guaranteed pod asking for one device and one CPU under
// the single-numa-node policy gets the device of node 1, beside its CPU.
// Had the device been chosen before the topology manager ran (the first
// free one, on node 0), the pod could not be aligned and would be refused.
func TestDeviceChosenWithMergedAffinity(t *testing.T) {
	n, rt := numaGPUNode(t, cpuset.New(0, 2), gpuOnNode("gpu0", 0), gpuOnNode("gpu1", 1))
	n.write("a.yaml", strings.ReplaceAll(gpuCPUPod, "NAME", "a"))
	a := n.waitPod("a-node1", "Running or refused", func(p v1.Pod) bool { return isRunning(p) || p.Status.Phase == v1.PodFailed })
	require.True(t, isRunning(a), "refused: %s: %s", a.Status.Reason, a.Status.Message)
	assert.Contains(t, []string{"1", "3"}, createdCPUs(rt, "a-uid"), "a CPU of node 1")
	assert.Equal(t, "gpu1", createdEnv(t, rt, "a-uid")[devicestest.DefaultEnv], "the device of node 1, beside the CPU")
}
