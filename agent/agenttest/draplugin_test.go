package agenttest_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
)

// A DRA driver's kubelet plugin registers as upstream's do: its registrar
// puts a socket in <root-dir>/plugins_registry naming the driver and its
// DRA services; the node registers it, keeps a connection to it and opens
// its health stream. A pod whose ResourceClaim was allocated one of the
// driver's devices is then prepared (NodePrepareResources) before its
// sandbox, its container's CreateContainer carries the device's CDI ID,
// and it runs. The health the plugin streams shows in the container's
// allocatedResourcesStatus (ResourceHealthStatus, with the message of
// ResourceHealthStatusMessage) at the next second's sync: Healthy, then
// Unhealthy "ECC errors"; with no report for 30 seconds the device is
// Unknown at the next sync. Deleting the pod unprepares its claim.
//
// The plugin is in memory (dratest's InMemory, Node.DRADialer): the node
// keeps its connection, and a goroutine reading a socket would never be
// durably blocked, so the bubble would never settle. The registration
// socket is real, served outside the bubble.
func TestDRAPluginRegistersPreparesAndReportsHealth(t *testing.T) {
	root, err := os.MkdirTemp("", "kk") // short: socket paths have at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	const driver = "gpu.example.com"
	endpoint := filepath.Join(root, "plugins", driver, "dra.sock")
	registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: driver,
		Endpoint: endpoint, SupportedVersions: dra.Services})
	serveOutside(t, filepath.Join(root, "plugins_registry", driver+"-reg.sock"), registrar.ServeListener)

	synctest.Test(t, func(t *testing.T) {
		plugin, err := dratest.Start(dratest.Options{Driver: driver, Endpoint: endpoint, Health: true, InMemory: true})
		require.NoError(t, err)
		t.Cleanup(plugin.Stop)
		plugin.SetDevices("gpu", &drav1.Device{RequestNames: []string{"gpu"}, PoolName: "node1", DeviceName: "gpu-0",
			CdiDeviceIds: []string{"example.com/gpu=gpu-0"}})
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root,
			Node: agent.NodeOptions{DRADialer: dratest.Dialer(plugin)}}})
		n.Step(2 * time.Second)
		if st := registrar.Statuses(); assert.Len(t, st, 1) {
			assert.True(t, st[0].PluginRegistered, st[0].Error)
		}
		assert.Equal(t, 1, plugin.Watchers(), "the node watches the plugin's health")

		const uid = types.UID("00000000-0000-4000-8000-0000000000ac")
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: uid}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "node1", Device: "gpu-0"}}}}
		n.SetResourceClaim(claim)
		app := container("app", "sleep", "3600")
		app.Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		p := pod("trainer", app)
		p.UID = uid
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
		n.AddPod(p)
		waitRunning(t, n, "trainer")

		assert.Equal(t, []dratest.Call{{Method: dratest.NodePrepareResources, Service: drav1.DRAPluginService,
			Claims: []dratest.Claim{{Namespace: "default", UID: "claim-uid", Name: "gpu"}}}}, plugin.Calls())
		creates := n.Runtime().CallsOf(fake.CreateContainer)
		if assert.Len(t, creates, 1) {
			cfg := creates[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig()
			assert.Equal(t, []*runtimeapi.CDIDevice{{Name: "example.com/gpu=gpu-0"}}, cfg.GetCDIDevices())
		}

		health := func() []v1.ResourceStatus {
			return n.Pod("default", "trainer").Status.ContainerStatuses[0].AllocatedResourcesStatus
		}
		want := func(h v1.ResourceHealthStatus, msg string) []v1.ResourceStatus {
			rh := v1.ResourceHealth{ResourceID: "example.com/gpu=gpu-0", Health: h}
			if msg != "" {
				rh.Message = &msg
			}
			return []v1.ResourceStatus{{Name: "claim:gpu", Resources: []v1.ResourceHealth{rh}}}
		}
		assert.Equal(t, want(v1.ResourceHealthStatusUnknown, ""), health(), "no report yet")

		device := &drahealthv1alpha1.DeviceIdentifier{PoolName: "node1", DeviceName: "gpu-0"}
		plugin.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: device, Health: drahealthv1alpha1.HealthStatus_HEALTHY})
		start := n.Now()
		assert.True(t, n.StepUntil(2*time.Second, func() bool { return assert.ObjectsAreEqual(want(v1.ResourceHealthStatusHealthy, ""), health()) }),
			"healthy: %v", health())
		assert.LessOrEqual(t, n.Now().Sub(start), time.Second, "at the next tick's sync")

		plugin.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: device, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY, Message: "ECC errors"})
		assert.True(t, n.StepUntil(2*time.Second, func() bool {
			return assert.ObjectsAreEqual(want(v1.ResourceHealthStatusUnhealthy, "ECC errors"), health())
		}), "unhealthy: %v", health())

		assert.True(t, n.StepUntil(2*time.Minute, func() bool { return assert.ObjectsAreEqual(want(v1.ResourceHealthStatusUnknown, ""), health()) }),
			"unknown once the report no longer holds: %v", health())
		_, err = os.Stat(filepath.Join(root, dra.HealthFile))
		assert.NoError(t, err, "the health is kept in the root directory")

		n.DeletePod("default", "trainer")
		assert.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "trainer") == nil }), "the pod is gone")
		calls := plugin.Calls()
		if assert.Len(t, calls, 2) {
			assert.Equal(t, dratest.NodeUnprepareResources, calls[1].Method)
		}
		assert.Empty(t, plugin.Prepared())
	})
}

// The node deletes its ResourceSlices as upstream's kubelet does
// (Cluster.ResourceSlices): all of them once as it starts, and a DRA
// driver's 30 seconds after its plugin's service stopped while it stays
// registered (e2e_node's "must be removed if plugin stops after
// registration"). The plugin is in memory, as above.
func TestDRADriverGoneDeletesItsResourceSlices(t *testing.T) {
	root, err := os.MkdirTemp("", "kk")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	const driver = "gpu.example.com"
	endpoint := filepath.Join(root, "plugins", driver, "dra.sock")
	registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: driver,
		Endpoint: endpoint, SupportedVersions: dra.Services})
	serveOutside(t, filepath.Join(root, "plugins_registry", driver+"-reg.sock"), registrar.ServeListener)

	synctest.Test(t, func(t *testing.T) {
		plugin, err := dratest.Start(dratest.Options{Driver: driver, Endpoint: endpoint, InMemory: true})
		require.NoError(t, err)
		t.Cleanup(plugin.Stop)
		var mu sync.Mutex
		var deleted []string // the drivers, "" for all
		slices := dra.ResourceSlicesFunc(func(_ context.Context, driver string) error {
			mu.Lock()
			defer mu.Unlock()
			deleted = append(deleted, driver)
			return nil
		})
		calls := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), deleted...)
		}
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root,
			Node: agent.NodeOptions{DRADialer: dratest.Dialer(plugin)}, Cluster: agent.ClusterOptions{ResourceSlices: slices}}})
		n.Step(2 * time.Second)
		if st := registrar.Statuses(); assert.Len(t, st, 1) {
			assert.True(t, st[0].PluginRegistered, st[0].Error)
		}
		assert.Equal(t, []string{""}, calls(), "all of the node's, as it starts")

		n.Step(time.Minute)
		assert.Equal(t, []string{""}, calls(), "the plugin serves its driver")

		plugin.Stop()
		n.Step(dra.DefaultWipingDelay - time.Second)
		assert.Equal(t, []string{""}, calls(), "not yet")
		n.Step(time.Second)
		assert.Equal(t, []string{"", driver}, calls(), "the driver's, 30 seconds after its plugin stopped")
	})
}
