//go:build containerd

// These tests run SyncPod, KillPod and GarbageCollect against a real
// containerd with runc and the busybox image. They are built only with
// -tags containerd; hack/containerd-start.sh starts the runtime and sets
// KK_CRI_ENDPOINT and KK_BUSYBOX_IMAGE. Real time passes in the runtime, so
// the tests wait on conditions with deadlines; the backoff clock is a fake
// clock kept at real time plus the backoff the test skips over.

package podsync_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

type ctrdHarness struct {
	t      *testing.T
	c      *cri.Client
	image  string
	clk    *clocktesting.FakeClock
	offset time.Duration
	pods   string
	s      *podsync.Syncer
}

func newCtrdHarness(t *testing.T) *ctrdHarness {
	t.Helper()
	c, image := ctrdtest.Client(t)
	h := &ctrdHarness{t: t, c: c, image: image, clk: clocktesting.NewFakeClock(time.Now())}
	h.pods = t.TempDir()
	var err error
	h.s, err = podsync.New(podsync.Options{Runtime: c, Clock: h.clk, Config: containerconfig.Options{LogRoot: t.TempDir(), PodsDir: h.pods}})
	require.NoError(t, err)
	return h
}

// skip advances the backoff clock by d beyond real time.
func (h *ctrdHarness) skip(d time.Duration) { h.offset += d; h.clk.SetTime(time.Now().Add(h.offset)) }

func (h *ctrdHarness) pod(policy v1.RestartPolicy, inits []v1.Container, apps ...v1.Container) *v1.Pod {
	uid := types.UID("kk-podsync-" + strings.ReplaceAll(h.t.Name(), "/", "-"))
	grace := int64(2)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ps-" + strings.ToLower(strings.ReplaceAll(h.t.Name(), "/", "-")), Namespace: "kubeletkit-test", UID: uid},
		Spec: v1.PodSpec{RestartPolicy: policy, HostNetwork: true, InitContainers: inits, Containers: apps,
			TerminationGracePeriodSeconds: &grace},
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := cri.GetPodStatus(ctx, h.c, p.UID, p.Name, p.Namespace)
		if !assert.NoError(h.t, err) {
			return
		}
		assert.NoError(h.t, h.s.KillPod(ctx, p, st, nil).Err())
		for _, sb := range st.Sandboxes {
			assert.NoError(h.t, h.c.RemovePodSandbox(ctx, sb.GetId()))
		}
	})
	return p
}

func (h *ctrdHarness) ctr(name string, cmd ...string) v1.Container {
	return v1.Container{Name: name, Image: h.image, Command: cmd}
}

func (h *ctrdHarness) status(p *v1.Pod) *cri.PodStatus {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := cri.GetPodStatus(ctx, h.c, p.UID, p.Name, p.Namespace)
	require.NoError(h.t, err)
	return st
}

func (h *ctrdHarness) sync(p *v1.Pod) podsync.Result {
	h.t.Helper()
	h.skip(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return h.s.SyncPod(ctx, p, h.status(p))
}

// waitExited waits until the newest instance of name has exited and has the
// given restart count.
func (h *ctrdHarness) waitExited(p *v1.Pod, name string, restarts string) *runtimeapi.ContainerStatus {
	h.t.Helper()
	var c *runtimeapi.ContainerStatus
	end := time.Now().Add(30 * time.Second)
	for {
		c = h.status(p).ContainerByName(name)
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED && c.GetAnnotations()[cri.ContainerRestartCountAnnotation] == restarts {
			return c
		}
		if time.Now().After(end) {
			h.t.Fatalf("timed out waiting for %s (restart %s) to exit; last %v", name, restarts, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestContainerdCrashLoopBackOff(t *testing.T) {
	h := newCtrdHarness(t)
	p := h.pod(v1.RestartPolicyAlways, nil, h.ctr("crash", "sh", "-c", "exit 3"))
	require.NoError(t, h.sync(p).Err())
	c := h.waitExited(p, "crash", "0")
	assert.Equal(t, int32(3), c.GetExitCode())
	assert.Equal(t, "Error", c.GetReason())

	require.NoError(t, step(t, h.sync(p), "crash").Err, "first restart is immediate")
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second} {
		c = h.waitExited(p, "crash", strconv.Itoa(i+1))
		assert.Equal(t, int32(3), c.GetExitCode())
		s := step(t, h.sync(p), "crash")
		require.ErrorIs(t, s.Err, podsync.ErrCrashLoopBackOff)
		assert.Contains(t, s.Message, "back-off "+delay.String()+" restarting failed container=crash")
		w, ok := h.s.WaitingReason(p.UID, "crash")
		assert.True(t, ok)
		assert.Equal(t, podsync.ReasonCrashLoopBackOff, w.Reason)
		h.skip(delay)
		require.NoError(t, step(t, h.sync(p), "crash").Err)
	}
	c = h.waitExited(p, "crash", "3")
	assert.Equal(t, int32(3), c.GetExitCode())
	assert.Len(t, h.status(p).ContainersByName("crash"), 4)
}

func TestContainerdRestartPolicyNeverAndOnFailure(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			h := newCtrdHarness(t)
			p := h.pod(policy, nil, h.ctr("done", "sh", "-c", "exit 0"))
			require.NoError(t, h.sync(p).Err())
			c := h.waitExited(p, "done", "0")
			assert.Equal(t, int32(0), c.GetExitCode())
			assert.Equal(t, "Completed", c.GetReason())
			r := h.sync(p)
			require.NoError(t, r.Err())
			assert.True(t, r.Actions.KillPod)
			assert.Empty(t, r.Actions.ContainersToStart)
			assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, h.status(p).Sandbox().GetState())
			assert.False(t, h.sync(p).Actions.CreateSandbox, "a finished pod stays down")
		})
	}
}

func TestContainerdInitThenAppThenKill(t *testing.T) {
	h := newCtrdHarness(t)
	p := h.pod(v1.RestartPolicyAlways, []v1.Container{h.ctr("init", "sh", "-c", "exit 0")},
		h.ctr("app", "sleep", "3600"))
	r := h.sync(p)
	require.NoError(t, r.Err())
	assert.Equal(t, 0, r.Actions.NextInitContainer)
	h.waitExited(p, "init", "0")
	r = h.sync(p)
	require.NoError(t, r.Err())
	assert.Equal(t, []int{0}, r.Actions.ContainersToStart)
	st := h.status(p)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("app").GetState())
	assert.True(t, h.sync(p).Actions.Nothing(), "steady")

	// A new Syncer (an agent restart) adopts what runs.
	s2, err := podsync.New(podsync.Options{Runtime: h.c, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	assert.True(t, s2.SyncPod(context.Background(), p, h.status(p)).Actions.Nothing())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, h.s.KillPod(ctx, p, h.status(p), nil).Err())
	st = h.status(p)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.ContainerByName("app").GetState())
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, st.Sandbox().GetState())

	require.NoError(t, h.s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 0, MaxContainers: -1},
		func(types.UID) bool { return false }))
	st = h.status(p)
	assert.Empty(t, st.Containers)
	assert.Empty(t, st.Sandboxes)
}

func TestContainerdTerminationMessageAndLog(t *testing.T) {
	h := newCtrdHarness(t)
	c := h.ctr("msg", "sh", "-c", "echo hello; echo bye > /dev/termination-log; exit 2")
	c.TerminationMessagePath = "/dev/termination-log"
	p := h.pod(v1.RestartPolicyNever, nil, c)
	require.NoError(t, h.sync(p).Err())
	st := h.waitExited(p, "msg", "0")
	assert.Equal(t, int32(2), st.GetExitCode())
	b, err := os.ReadFile(filepath.Join(h.pods, string(p.UID), "containers", "msg", "0"))
	require.NoError(t, err)
	assert.Equal(t, "bye\n", string(b))
	assert.True(t, strings.HasSuffix(st.GetLogPath(), filepath.Join("kubeletkit-test_"+p.Name+"_"+string(p.UID), "msg", "0.log")), st.GetLogPath())
	logb, err := os.ReadFile(st.GetLogPath())
	require.NoError(t, err)
	assert.Contains(t, string(logb), "stdout F hello")
}

// A running regular init container is resized in place on containerd
// (upstream's InPlacePodVerticalScalingInitContainers): the same
// container, which then reports the new CPU quota and memory limit.
func TestContainerdResizesRunningInitContainer(t *testing.T) {
	h := newCtrdHarness(t)
	// Where the node accounts swap, the swap limit follows the memory
	// limit, as the agent sets it (runc refuses a memory limit above the
	// swap limit on cgroup v1).
	var err error
	h.s, err = podsync.New(podsync.Options{Runtime: h.c, Clock: h.clk, Config: containerconfig.Options{LogRoot: t.TempDir(), PodsDir: h.pods,
		MemorySwapController: cgroups.MemorySwapAccounted()}})
	require.NoError(t, err)
	sized := func(cpu, memory string) v1.Container {
		c := h.ctr("init", "sleep", "3600")
		l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
		c.Resources = v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
		return c
	}
	p := h.pod(v1.RestartPolicyAlways, []v1.Container{sized("100m", "64Mi")}, h.ctr("app", "sleep", "3600"))
	require.NoError(t, h.sync(p).Err())
	st := h.status(p).ContainerByName("init")
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.GetState())
	if st.GetResources().GetLinux() == nil {
		t.Skip("this containerd reports no container resources: nothing to compare, as upstream")
	}
	id := st.GetId()

	p.Spec.InitContainers[0] = sized("200m", "128Mi")
	r := h.sync(p)
	require.NoError(t, r.Err())
	require.Len(t, r.Actions.ContainersToUpdate, 1)
	st = h.status(p).ContainerByName("init")
	assert.Equal(t, id, st.GetId(), "resized in place, not restarted")
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.GetState())
	assert.Equal(t, int64(128<<20), st.GetResources().GetLinux().GetMemoryLimitInBytes())
	assert.Equal(t, int64(20000), st.GetResources().GetLinux().GetCpuQuota())
	assert.True(t, podsync.ResizeDone(p, &p.Spec.InitContainers[0], st))
	assert.True(t, h.sync(p).Actions.Nothing(), "nothing left to do while init runs")
}
