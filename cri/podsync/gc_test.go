package podsync_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
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

// With ContainerLogLinksDir, a started container's log is linked there
// under upstream's name; the link goes with the container, and a link whose
// file and container are both gone is swept; other files stay.
func TestContainerLogLinks(t *testing.T) {
	h := newLinkedCrasher(t)
	clk, s, links, pod, status := h.clk, h.s, h.links, h.pod, h.status
	ctx := context.Background()
	require.NoError(t, s.SyncPod(ctx, pod, status()).Err())
	first := status().ContainersByName("app")[0]
	link := filepath.Join(links, pod.Name+"_"+pod.Namespace+"_app-"+first.GetId()+".log")
	target, err := os.Readlink(link)
	require.NoError(t, err, "the started container's log is linked")
	assert.Equal(t, first.GetLogPath(), target)

	// Dangling links of containers the runtime does not have are swept;
	// a file that is not a link, and a link whose file exists, stay.
	stray := filepath.Join(links, "gone_default_app-0123.log")
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "missing.log"), stray))
	notLink := filepath.Join(links, "plain.log")
	require.NoError(t, os.WriteFile(notLink, nil, 0o644))

	clk.Step(time.Second) // the container exits
	require.NoError(t, s.SyncPod(ctx, pod, status()).Err())
	require.Len(t, status().ContainersByName("app"), 2)
	require.NoError(t, s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, func(types.UID) bool { return true }))
	_, err = os.Lstat(link)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the removed container's link went with it")
	_, err = os.Lstat(stray)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a dangling link is swept")
	assert.FileExists(t, notLink)
	second := status().ContainersByName("app")[0]
	_, err = os.Lstat(filepath.Join(links, pod.Name+"_"+pod.Namespace+"_app-"+second.GetId()+".log"))
	assert.NoError(t, err, "the running container's link stays, even before its file is written")
}

// linkedCrasher is a Syncer with ContainerLogLinksDir on the fake runtime,
// and a pod whose container exits 3 a second after it starts.
type linkedCrasher struct {
	t     *testing.T
	clk   *clocktesting.FakeClock
	rt    *fake.Runtime
	s     *podsync.Syncer
	links string
	pod   *v1.Pod
}

func newLinkedCrasher(t *testing.T) *linkedCrasher {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}, Rules: []fake.Rule{exitRule(3, time.Second)}})
	t.Cleanup(rt.Close)
	links := filepath.Join(t.TempDir(), "containers")
	s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, ContainerLogLinksDir: links, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	return &linkedCrasher{t: t, clk: clk, rt: rt, s: s, links: links, pod: newPod("", nil, crasher("app"))}
}

// status is the pod's status from the runtime.
func (h *linkedCrasher) status() *cri.PodStatus {
	h.t.Helper()
	st, err := cri.GetPodStatus(context.Background(), h.rt, h.pod.UID, h.pod.Name, h.pod.Namespace)
	require.NoError(h.t, err)
	return st
}
