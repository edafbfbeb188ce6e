package podsync_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

func TestGarbageCollect(t *testing.T) {
	h := newHarness(t, exitRule(3, time.Second))
	pod := newPod("", nil, crasher("app"))
	// Four instances: three dead, one running.
	for range 4 {
		require.NoError(t, h.sync(pod).Err())
		h.clk.Step(time.Second) // exits
		h.clk.Step(5 * time.Minute)
	}
	require.NoError(t, h.sync(pod).Err())
	require.Len(t, h.status(pod).ContainersByName("app"), 5)
	ctx := context.Background()
	exists := func(uid types.UID) bool { return uid == pod.UID }

	// MinAge keeps young ones.
	require.NoError(t, h.s.GarbageCollect(ctx, podsync.GCPolicy{MinAge: time.Hour, MaxPerPodContainer: 1, MaxContainers: -1}, exists))
	assert.Len(t, h.status(pod).ContainersByName("app"), 5)

	require.NoError(t, h.s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 2, MaxContainers: -1}, exists))
	assert.Len(t, h.status(pod).ContainersByName("app"), 3, "2 dead + the current one")
	require.NoError(t, h.s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: -1, MaxContainers: 1}, exists))
	cs := h.status(pod).ContainersByName("app")
	require.Len(t, cs, 2)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, cs[0].GetState(), "the newest is never removed while running")

	// The pod goes away: its dead containers and its sandbox are removed.
	require.NoError(t, h.s.KillPod(ctx, pod, h.status(pod), nil).Err())
	require.NoError(t, h.s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 1, MaxContainers: -1}, func(types.UID) bool { return false }))
	st := h.status(pod)
	assert.Empty(t, st.Containers)
	assert.Empty(t, st.Sandboxes)
}

func TestGarbageCollectKeepsLivePodsNewestSandbox(t *testing.T) {
	h := newHarness(t, exitRule(0, 0))
	c := crasher("app")
	c.Command = []string{"sh", "-c", "exit 0"}
	pod := newPod(v1.RestartPolicyNever, nil, c)
	require.NoError(t, h.sync(pod).Err())
	require.NoError(t, h.sync(pod).Err()) // done: pod killed
	require.NoError(t, h.s.GarbageCollect(context.Background(), podsync.GCPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, nil))
	st := h.status(pod)
	assert.Empty(t, st.Containers)
	assert.Len(t, st.Sandboxes, 1, "a live pod keeps its newest sandbox")
}
