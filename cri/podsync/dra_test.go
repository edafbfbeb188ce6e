package podsync_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
)

// A pod whose resource claims cannot be prepared (upstream's DRA manager
// fails: here, by default, no claim can even be read) gets no sandbox and
// no container: SyncPod records upstream's FailedPrepareDynamicResources
// event and ends without an error, and the next sync tries again. A pod
// without claims is not asked about.
func TestSyncPodHoldsPodWhoseClaimsCannotBePrepared(t *testing.T) {
	h := newHarness(t)
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
	for range 2 {
		r := h.sync(pod)
		assert.NoError(t, r.Err())
		assert.Empty(t, r.Steps)
		assert.True(t, r.Actions.CreateSandbox)
		assert.Equal(t, []string{"Warning FailedPrepareDynamicResources Failed to prepare dynamic resources: prepare dynamic resources: fetch ResourceClaim gpu: no source of ResourceClaims"},
			h.rec.TakeStrings())
	}
	assert.Empty(t, h.rt.CallsOf(fake.RunPodSandbox))
	assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))

	// With a preparer that says yes, the pod runs.
	var asked []string
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: &eventtest.Recorder{},
		Config:           containerconfig.Options{LogRoot: t.TempDir()},
		DynamicResources: preparerFunc(func(_ context.Context, p *v1.Pod) error { asked = append(asked, p.Name); return nil })})
	require.NoError(t, err)
	require.NoError(t, s.SyncPod(context.Background(), pod, h.status(pod)).Err())
	assert.Equal(t, []string{"web"}, asked)
	assert.Len(t, h.rt.CallsOf(fake.RunPodSandbox), 1)
	// Once the sandbox exists, the claims are not prepared again.
	require.NoError(t, s.SyncPod(context.Background(), pod, h.status(pod)).Err())
	assert.Equal(t, []string{"web"}, asked)

	// A preparer's error is the event's message.
	s, err = podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, Config: containerconfig.Options{LogRoot: t.TempDir()},
		DynamicResources: preparerFunc(func(context.Context, *v1.Pod) error {
			return errors.New("prepare dynamic resources: DRA driver gpu.example.com is not registered")
		})})
	require.NoError(t, err)
	other := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	other.UID, other.Name = "uid-2", "other"
	assert.NoError(t, s.SyncPod(context.Background(), other, nil).Err())
	assert.Equal(t, []string{"Warning FailedPrepareDynamicResources Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not registered"},
		h.rec.TakeStrings())
}

type preparerFunc func(ctx context.Context, pod *v1.Pod) error

func (f preparerFunc) PrepareResources(ctx context.Context, pod *v1.Pod) error { return f(ctx, pod) }

// A pod whose claim a DRA driver prepares runs, end to end through a DRA
// plugin: the claim is prepared before the sandbox, the container that
// uses it gets the driver's CDI devices in its CreateContainer request
// (the one that does not, none), and once the pod is killed
// UnprepareResources has the driver unprepare it.
func TestSyncPodGivesContainersTheirClaimsCDIDevices(t *testing.T) {
	plugin, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: filepath.Join(dratest.SocketDir(t), "dra.sock")})
	require.NoError(t, err)
	t.Cleanup(plugin.Stop)
	plugin.SetDevices("gpu", &drav1.Device{PoolName: "node-1", DeviceName: "gpu-0", CdiDeviceIds: []string{"gpu.example.com/gpu=0"}})

	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"), ctr("sidecar"))
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "g", ResourceClaimName: ptr.To("gpu")}}
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "g"}}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: pod.Namespace, UID: "claim-uid"}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	m, err := dra.New(dra.Options{Claims: dra.ClaimsFunc(func(context.Context, string, string) (*resourcev1.ResourceClaim, error) { return claim, nil })})
	require.NoError(t, err)
	t.Cleanup(m.Registry().Close)
	require.NoError(t, m.Registry().RegisterPlugin(context.Background(), plugin.Driver(), plugin.Endpoint(), plugin.Services()))

	h := newHarness(t)
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec,
		Config: containerconfig.Options{LogRoot: t.TempDir(), ClaimDevices: m}, DynamicResources: m})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.SyncPod(ctx, pod, h.status(pod)).Err())
	for _, e := range h.rec.TakeStrings() {
		assert.NotContains(t, e, podsync.EventFailedPrepareDynamicResources)
	}
	assert.Equal(t, []string{"claim-uid"}, plugin.Prepared())
	cdi := map[string][]string{}
	for _, c := range h.rt.CallsOf(fake.CreateContainer) {
		cfg := c.Request.(*runtimeapi.CreateContainerRequest).GetConfig()
		var ids []string
		for _, d := range cfg.GetCDIDevices() {
			ids = append(ids, d.GetName())
		}
		cdi[cfg.GetMetadata().GetName()] = ids
	}
	assert.Equal(t, map[string][]string{"app": {"gpu.example.com/gpu=0"}, "sidecar": nil}, cdi)

	require.NoError(t, s.KillPod(ctx, pod, h.status(pod), ptr.To[int64](0)).Err())
	require.NoError(t, s.UnprepareResources(ctx, pod))
	assert.Empty(t, plugin.Prepared())
	assert.Equal(t, dratest.NodeUnprepareResources, plugin.Calls()[1].Method)
}
