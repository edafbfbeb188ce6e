package podsync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
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
