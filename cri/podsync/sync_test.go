package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
)

type harness struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	rt  *fake.Runtime
	s   *podsync.Syncer
	rec *eventtest.Recorder
}

func newHarness(t *testing.T, rules ...fake.Rule) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}, Rules: rules})
	t.Cleanup(rt.Close)
	rec := &eventtest.Recorder{}
	s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Recorder: rec, Config: containerconfig.Options{LogRoot: t.TempDir(), NodeName: "node-1", HostIPs: []string{"192.168.1.10"}}})
	require.NoError(t, err)
	return &harness{t: t, clk: clk, rt: rt, s: s, rec: rec}
}

func (h *harness) status(pod *v1.Pod) *cri.PodStatus {
	h.t.Helper()
	st, err := cri.GetPodStatus(context.Background(), h.rt, pod.UID, pod.Name, pod.Namespace)
	require.NoError(h.t, err)
	return st
}

func (h *harness) sync(pod *v1.Pod) podsync.Result {
	h.t.Helper()
	return h.s.SyncPod(context.Background(), pod, h.status(pod))
}

// step returns the step of the named container, failing when there is none.
func step(t *testing.T, r podsync.Result, name string) podsync.StepResult {
	t.Helper()
	for _, s := range r.Steps {
		if s.Target == name && (s.Step == podsync.StepStartContainer || s.Step == podsync.StepInitContainer) {
			return s
		}
	}
	t.Fatalf("no start step for %s in %+v", name, r.Steps)
	return podsync.StepResult{}
}

func exitRule(code int32, after time.Duration) fake.Rule {
	return fake.Rule{Command: []string{"sh", "-c", fmt.Sprintf("exit %d", code)},
		Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: code, RunFor: after}}
}

func crasher(name string) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1", Command: []string{"sh", "-c", "exit 3"}}
}

func TestSyncPodStartsPod(t *testing.T) {
	h := newHarness(t)
	pod := newPod("", nil, ctr("app"), ctr("app2"))
	r := h.sync(pod)
	require.NoError(t, r.Err())
	assert.True(t, r.Actions.CreateSandbox)
	st := h.status(pod)
	require.Len(t, st.Sandboxes, 1)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, st.Sandboxes[0].GetState())
	for _, n := range []string{"app", "app2"} {
		c := st.ContainerByName(n)
		require.NotNil(t, c, n)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, c.GetState())
		assert.Equal(t, "0", c.GetAnnotations()[cri.ContainerRestartCountAnnotation])
		assert.Equal(t, "uid-1", c.GetLabels()[cri.PodUIDLabel])
		assert.Equal(t, "container", c.GetAnnotations()[cri.ContainerTypeAnnotation])
	}
	// The harness's node has no cluster DNS: the ClusterFirst pod gets the
	// Default policy's, with upstream's events on the node and the pod,
	// recorded through the Syncer's Recorder.
	assert.Equal(t, []string{"MissingClusterDNS", "MissingClusterDNS", "Pulled", "Created", "Started", "Pulled", "Created", "Started"}, h.rec.TakeReasons())
	assert.Equal(t, []string{"127.0.0.1"}, h.rt.CallsOf(fake.RunPodSandbox)[0].Request.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetDnsConfig().GetServers())

	// Steady: nothing more happens, and adoption by a new Syncer (an agent
	// restart) starts no duplicates.
	s2, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	for _, s := range []*podsync.Syncer{h.s, s2} {
		r = s.SyncPod(context.Background(), pod, h.status(pod))
		assert.True(t, r.Actions.Nothing(), "%+v", r.Actions)
		assert.Empty(t, r.Steps)
	}
	assert.Len(t, h.rt.CallsOf(fake.CreateContainer), 2)
}

func TestSyncPodCrashLoopBackOff(t *testing.T) {
	h := newHarness(t, exitRule(3, 0))
	pod := newPod(v1.RestartPolicyAlways, nil, crasher("app"))
	r := h.sync(pod) // first start, exits at once
	require.NoError(t, r.Err())
	// The first restart is immediate and arms a 10s backoff.
	require.NoError(t, step(t, h.sync(pod), "app").Err)
	restarts := 1
	for _, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second} {
		s := step(t, h.sync(pod), "app")
		require.ErrorIs(t, s.Err, podsync.ErrCrashLoopBackOff, "delay %s", delay)
		assert.Equal(t, podsync.ReasonCrashLoopBackOff, s.Reason)
		assert.Equal(t, fmt.Sprintf("back-off %s restarting failed container=app pod=web_default(uid-1)", delay), s.Message)
		w, ok := h.s.WaitingReason("uid-1", "app")
		assert.True(t, ok)
		assert.Equal(t, v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: s.Message}, w)
		h.clk.Step(delay - time.Second)
		require.ErrorIs(t, step(t, h.sync(pod), "app").Err, podsync.ErrCrashLoopBackOff, "1s before %s", delay)
		h.clk.Step(time.Second)
		s = step(t, h.sync(pod), "app")
		require.NoError(t, s.Err, "after %s", delay)
		restarts++
		c := h.status(pod).ContainerByName("app")
		assert.Equal(t, fmt.Sprint(restarts), c.GetAnnotations()[cri.ContainerRestartCountAnnotation])
		assert.Equal(t, int32(3), c.GetExitCode())
		assert.Equal(t, "Error", c.GetReason())
		_, ok = h.s.WaitingReason("uid-1", "app")
		assert.False(t, ok, "reason cleared on start")
	}
	assert.Contains(t, h.rec.TakeReasons(), podsync.EventBackOff)

	// Reset: a container that ran 10 minutes and then failed restarts at
	// once, and the next backoff is 10s again.
	h.rt.SetRules([]fake.Rule{exitRule(3, 11*time.Minute)})
	h.clk.Step(300 * time.Second)
	require.NoError(t, step(t, h.sync(pod), "app").Err)
	h.clk.Step(11 * time.Minute) // runs 11 minutes, then exits 3
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, h.status(pod).ContainerByName("app").GetState())
	h.rt.SetRules([]fake.Rule{exitRule(3, 0)})
	require.NoError(t, step(t, h.sync(pod), "app").Err, "restart after a long run is immediate")
	s := step(t, h.sync(pod), "app")
	assert.Equal(t, "back-off 10s restarting failed container=app pod=web_default(uid-1)", s.Message)
}

// crashLoop syncs a crashing container's pod through its restarts and
// returns the back-off delays it waited, each waited out to the second.
func (h *harness) crashLoop(pod *v1.Pod, restarts int) []string {
	h.t.Helper()
	var delays []string
	for range restarts {
		s := step(h.t, h.sync(pod), "app")
		if s.Err == nil {
			delays = append(delays, "0s")
			continue
		}
		var be *podsync.BackoffError
		require.ErrorAs(h.t, s.Err, &be)
		wait := be.Until.Sub(h.clk.Now())
		delays = append(delays, wait.String())
		h.clk.Step(wait)
		require.NoError(h.t, step(h.t, h.sync(pod), "app").Err, "after %s", wait)
	}
	return delays
}

// With upstream's crashLoopBackOff.maxContainerRestartPeriod
// (KubeletCrashLoopBackOffMax, beta and on by default since 1.35), the
// crash loop doubles up to it instead of 5m; one shorter than 10s is the
// first delay too (upstream's newCrashLoopBackOff). A crash loop still
// starts over only after 10 minutes without a crash, and image pulls keep
// their own back-off.
func TestSyncPodMaxContainerRestartPeriod(t *testing.T) {
	for _, tc := range []struct {
		max  time.Duration
		want []string
	}{
		{0, []string{"0s", "10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"}},
		{30 * time.Second, []string{"0s", "10s", "20s", "30s", "30s", "30s"}},
		{5 * time.Second, []string{"0s", "5s", "5s", "5s"}},
		{time.Second, []string{"0s", "1s", "1s"}},
	} {
		t.Run(tc.max.String(), func(t *testing.T) {
			h := newHarness(t, exitRule(3, 0))
			s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec,
				MaxContainerRestartPeriod: tc.max, Config: containerconfig.Options{LogRoot: t.TempDir()}})
			require.NoError(t, err)
			h.s = s
			pod := newPod(v1.RestartPolicyAlways, nil, crasher("app"))
			require.NoError(t, h.sync(pod).Err()) // the first start
			assert.Equal(t, tc.want, h.crashLoop(pod, len(tc.want)))

			// A run longer than twice the maximum, but shorter than 10
			// minutes, does not start the back-off over.
			if tc.max == 0 {
				return
			}
			h.rt.SetRules([]fake.Rule{exitRule(3, 2*tc.max+time.Second)})
			h.clk.Step(tc.max)
			require.NoError(t, step(t, h.sync(pod), "app").Err)
			h.clk.Step(2*tc.max + time.Second)
			st := step(t, h.sync(pod), "app")
			require.ErrorIs(t, st.Err, podsync.ErrCrashLoopBackOff)
			assert.Contains(t, st.Message, fmt.Sprintf("back-off %s restarting", tc.max))
		})
	}

	t.Run("image pulls", func(t *testing.T) {
		h := newHarness(t)
		s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec,
			MaxContainerRestartPeriod: time.Second, Config: containerconfig.Options{LogRoot: t.TempDir()}})
		require.NoError(t, err)
		h.s = s
		h.rt.SetPullBehavior("example.com/app:2", fake.PullBehavior{Err: errors.New("manifest unknown")})
		pod := newPod("", nil, v1.Container{Name: "app", Image: "example.com/app:2"})
		require.ErrorIs(t, step(t, h.sync(pod), "app").Err, podsync.ErrImagePull)
		h.clk.Step(9 * time.Second)
		require.ErrorIs(t, step(t, h.sync(pod), "app").Err, podsync.ErrImagePullBackOff, "10s, not the crash loop's 1s")
	})

	rt := fake.New(fake.Options{})
	defer rt.Close()
	_, err := podsync.New(podsync.Options{Runtime: rt, MaxContainerRestartPeriod: -time.Second})
	assert.ErrorIs(t, err, podsync.ErrInvalidOptions)
}

// A container its liveness probe kills restarts at once while no earlier
// instance has exited; after that it backs off from its predecessor's exit,
// as upstream's: the kill goes ahead, the start waits.
func TestSyncPodLivenessKillsBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t0 := clk.Now()
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}})
	t.Cleanup(rt.Close)
	var unhealthy string // the container ID whose liveness probe failed
	s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Config: containerconfig.Options{LogRoot: t.TempDir(), NodeName: "node-1"},
		Probes: podsync.Probes{Liveness: podsync.ProbeResultsFunc(func(id string) bool { return id == unhealthy })}})
	require.NoError(t, err)
	h := &harness{t: t, clk: clk, rt: rt, s: s}
	app := ctr("app")
	app.LivenessProbe = &v1.Probe{}
	pod := newPod(v1.RestartPolicyAlways, nil, app)
	require.NoError(t, h.sync(pod).Err())

	kill := func() podsync.StepResult {
		t.Helper()
		unhealthy = h.status(pod).ContainerByName("app").GetId()
		r := h.sync(pod)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, h.status(pod).ContainerByID(unhealthy).GetState(), "killed")
		return step(t, r, "app")
	}
	require.NoError(t, kill().Err, "first kill: restarted at once")
	clk.Step(5 * time.Second)
	require.NoError(t, kill().Err, "second kill: the first instance's exit arms the back-off, restarted at once")
	clk.Step(3 * time.Second)
	st := kill()
	require.ErrorIs(t, st.Err, podsync.ErrCrashLoopBackOff, "third kill: backing off from the second instance's exit")
	assert.Equal(t, "back-off 10s restarting failed container=app pod=web_default(uid-1)", st.Message)
	var be *podsync.BackoffError
	require.ErrorAs(t, st.Err, &be)
	assert.True(t, t0.Add(5*time.Second+10*time.Second).Equal(be.BackoffExpiration()), "the second instance exited at t0+5s: %s", be.BackoffExpiration())
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, h.status(pod).ContainerByName("app").GetState(), "nothing runs until the back-off ends")
}

// A start the runtime refuses is reported with the runtime's own message,
// as upstream's: no "cri StartContainer: Unknown:" before it.
func TestSyncPodRunContainerErrorMessage(t *testing.T) {
	h := newHarness(t)
	msg := `failed to create containerd task: exec: "/no/such/binary": stat /no/such/binary: no such file or directory: unknown`
	h.rt.InjectFault(fake.StartContainer, fake.Fault{Err: &cri.Error{Method: "StartContainer", Code: codes.Unknown, Message: msg}, Times: 1})
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	st := step(t, h.sync(pod), "app")
	require.ErrorIs(t, st.Err, podsync.ErrRunContainer)
	assert.Equal(t, podsync.ReasonRunContainerError, st.Reason)
	assert.Equal(t, msg, st.Message)
	w, ok := h.s.WaitingReason("uid-1", "app")
	require.True(t, ok)
	assert.Equal(t, v1.ContainerStateWaiting{Reason: podsync.ReasonRunContainerError, Message: msg}, w)
	assert.Contains(t, h.rec.Strings(), "Warning Failed Error: "+msg)
}

// When the runtime knows no instance of a container but its log files are
// there (the runtime lost its state, the logs stayed), the restart count
// goes on from the newest log file, as upstream's.
func TestSyncPodRestartCountFromLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"no logs", nil, "0"},
		{"0.log", []string{"0.log"}, "1"},
		{"the highest, rotated ones too", []string{"0.log", "3.log", "5.log.20260101-000000.gz", "2.log"}, "6"},
		{"other files are ignored", []string{"1.log", "notes.txt", "x7.log", "8.logs", "-9.log"}, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}})
			t.Cleanup(rt.Close)
			root := t.TempDir()
			s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Config: containerconfig.Options{LogRoot: root, NodeName: "node-1"}})
			require.NoError(t, err)
			pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
			dir := filepath.Join(containerconfig.LogDirectory(root, pod), "app")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "9.log"), 0o755), "a directory is not a log")
			for _, f := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
			}
			h := &harness{t: t, clk: clk, rt: rt, s: s}
			require.NoError(t, h.sync(pod).Err())
			c := h.status(pod).ContainerByName("app")
			assert.Equal(t, tc.want, c.GetAnnotations()[cri.ContainerRestartCountAnnotation])
		})
	}
}

func TestSyncPodRestartPolicies(t *testing.T) {
	for _, tt := range []struct {
		policy    v1.RestartPolicy
		exit      int32
		restarted bool
	}{
		{v1.RestartPolicyAlways, 0, true}, {v1.RestartPolicyAlways, 3, true},
		{v1.RestartPolicyOnFailure, 0, false}, {v1.RestartPolicyOnFailure, 3, true},
		{v1.RestartPolicyNever, 0, false}, {v1.RestartPolicyNever, 3, false},
	} {
		t.Run(fmt.Sprintf("%s/exit=%d", tt.policy, tt.exit), func(t *testing.T) {
			h := newHarness(t, exitRule(tt.exit, 0))
			c := crasher("app")
			c.Command = []string{"sh", "-c", fmt.Sprintf("exit %d", tt.exit)}
			pod := newPod(tt.policy, nil, c)
			require.NoError(t, h.sync(pod).Err())
			r := h.sync(pod)
			require.NoError(t, r.Err())
			assert.Equal(t, tt.restarted, len(r.Actions.ContainersToStart) == 1)
			if !tt.restarted {
				assert.True(t, r.Actions.KillPod)
				assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, h.status(pod).Sandbox().GetState())
				// Stays down: a Never/OnFailure pod that finished gets no new sandbox.
				r = h.sync(pod)
				assert.False(t, r.Actions.CreateSandbox)
			}
			cs := h.status(pod).ContainersByName("app")
			assert.Equal(t, map[bool]int{true: 2, false: 1}[tt.restarted], len(cs))
		})
	}
}

func TestSyncPodInitAndSidecars(t *testing.T) {
	h := newHarness(t, fake.Rule{Command: []string{"init"}, Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 5 * time.Second}})
	i1 := v1.Container{Name: "init1", Image: "busybox:1", Command: []string{"init"}}
	i2 := v1.Container{Name: "init2", Image: "busybox:1", Command: []string{"init"}}
	pod := newPod("", []v1.Container{sidecar("proxy"), i1, i2}, ctr("app"))

	r := h.sync(pod)
	require.NoError(t, r.Err())
	assert.Equal(t, []int{0}, r.Actions.InitContainersToStart, "sidecar first")
	r = h.sync(pod)
	assert.Equal(t, 1, r.Actions.NextInitContainer)
	r = h.sync(pod)
	assert.True(t, r.Actions.Nothing(), "init1 running: wait")
	h.clk.Step(5 * time.Second)
	r = h.sync(pod)
	assert.Equal(t, 2, r.Actions.NextInitContainer)
	h.clk.Step(5 * time.Second)
	r = h.sync(pod)
	assert.Equal(t, []int{0}, r.Actions.ContainersToStart)
	st := h.status(pod)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("proxy").GetState())
	assert.Equal(t, "init", st.ContainerByName("proxy").GetAnnotations()[cri.ContainerTypeAnnotation])
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("app").GetState())

	// The sidecar crashes: restarted, app untouched.
	require.NoError(t, h.rt.ExitContainer(st.ContainerByName("proxy").GetId(), 1, "Error"))
	r = h.sync(pod)
	assert.Equal(t, []int{0}, r.Actions.InitContainersToStart)
	require.NoError(t, r.Err())

	// KillPod stops the app before the sidecar, then the sandbox.
	r = h.s.KillPod(context.Background(), pod, h.status(pod), nil)
	require.NoError(t, r.Err())
	stops := h.rt.CallsOf(fake.StopContainer)
	require.Len(t, stops, 2)
	assert.Equal(t, h.status(pod).ContainerByName("app").GetId(), stops[0].Request.(*runtimeapi.StopContainerRequest).GetContainerId())
	assert.Equal(t, int64(30), stops[0].Request.(*runtimeapi.StopContainerRequest).GetTimeout())
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, h.status(pod).Sandbox().GetState())
}

// A sidecar backing off holds up nothing after it: an app container that
// exited is restarted in the same sync, as upstream's SyncPod skips a
// restartable init container it cannot start.
func TestSyncPodSidecarBackOffDoesNotHoldUpTheApp(t *testing.T) {
	h := newHarness(t)
	pod := newPod("", []v1.Container{sidecar("proxy")}, ctr("app"))
	require.NoError(t, h.sync(pod).Err())
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("app").GetState())

	// The sidecar crashes and restarts, then crashes again: backing off.
	require.NoError(t, h.rt.ExitContainer(st.ContainerByName("proxy").GetId(), 1, "Error"))
	require.NoError(t, h.sync(pod).Err())
	require.NoError(t, h.rt.ExitContainer(h.status(pod).ContainerByName("proxy").GetId(), 1, "Error"))
	// The app exits too while the sidecar backs off.
	require.NoError(t, h.rt.ExitContainer(h.status(pod).ContainerByName("app").GetId(), 0, "Completed"))
	r := h.sync(pod)
	assert.Equal(t, []int{0}, r.Actions.InitContainersToStart)
	assert.Equal(t, []int{0}, r.Actions.ContainersToStart)
	require.ErrorIs(t, r.Err(), podsync.ErrCrashLoopBackOff, "the sidecar backs off")
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, h.status(pod).ContainerByName("app").GetState(), "the app restarted regardless")
	assert.NotEqual(t, runtimeapi.ContainerState_CONTAINER_RUNNING, h.status(pod).ContainerByName("proxy").GetState())
}

func TestSyncPodInitFailureNever(t *testing.T) {
	h := newHarness(t, exitRule(1, 0))
	i1 := crasher("init1")
	i1.Command = []string{"sh", "-c", "exit 1"}
	pod := newPod(v1.RestartPolicyNever, []v1.Container{i1}, ctr("app"))
	require.NoError(t, h.sync(pod).Err())
	r := h.sync(pod)
	assert.True(t, r.Actions.InitFailed)
	assert.Nil(t, h.status(pod).ContainerByName("app"))
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, h.status(pod).Sandbox().GetState())
}

func TestSyncPodImagePullBackOff(t *testing.T) {
	h := newHarness(t)
	h.rt.SetPullBehavior("example.com/app:2", fake.PullBehavior{Err: errors.New("manifest unknown")})
	app := v1.Container{Name: "app", Image: "example.com/app:2"}
	pod := newPod("", nil, app)

	expect := func(reason string, sentinel error) {
		t.Helper()
		s := step(t, h.sync(pod), "app")
		require.ErrorIs(t, s.Err, sentinel)
		assert.Equal(t, reason, s.Reason)
		if reason == podsync.ReasonErrImagePull {
			assert.Contains(t, s.Err.Error(), `pull image "example.com/app:2"`, "the error keeps its context for logs")
		}
		w, ok := h.s.WaitingReason("uid-1", "app")
		assert.True(t, ok)
		assert.Equal(t, reason, w.Reason)
	}
	expect(podsync.ReasonErrImagePull, podsync.ErrImagePull)
	w, _ := h.s.WaitingReason("uid-1", "app")
	assert.Contains(t, w.Message, "manifest unknown", "the runtime's message")
	assert.NotContains(t, w.Message, "cri PullImage")
	expect(podsync.ReasonImagePullBackOff, podsync.ErrImagePullBackOff)
	w, _ = h.s.WaitingReason("uid-1", "app")
	assert.True(t, strings.HasPrefix(w.Message, `Back-off pulling image "example.com/app:2": ErrImagePull: `), "names the failure it backs off from: %s", w.Message)
	assert.Contains(t, w.Message, "manifest unknown")
	var be *podsync.BackoffError
	assert.False(t, errors.As(step(t, h.sync(pod), "app").Err, &be), "an image pull back-off is retried after the generic back-off, as upstream's")
	h.clk.Step(10 * time.Second)
	expect(podsync.ReasonErrImagePull, podsync.ErrImagePull)
	h.clk.Step(19 * time.Second)
	expect(podsync.ReasonImagePullBackOff, podsync.ErrImagePullBackOff)
	h.clk.Step(time.Second)
	expect(podsync.ReasonErrImagePull, podsync.ErrImagePull)
	assert.Len(t, h.rt.CallsOf(fake.PullImage), 3)

	h.rt.SetPullBehavior("example.com/app:2", fake.PullBehavior{})
	h.clk.Step(40 * time.Second)
	require.NoError(t, step(t, h.sync(pod), "app").Err)
	_, ok := h.s.WaitingReason("uid-1", "app")
	assert.False(t, ok)
	assert.Contains(t, h.rec.TakeReasons(), podsync.EventPulling)

	h.s.RemovePod("uid-1")
}

func TestSyncPodPullPolicies(t *testing.T) {
	h := newHarness(t)
	never := v1.Container{Name: "never", Image: "example.com/absent:1", ImagePullPolicy: v1.PullNever}
	present := v1.Container{Name: "present", Image: "busybox:1"}
	always := v1.Container{Name: "always", Image: "busybox:1", ImagePullPolicy: v1.PullAlways}
	pod := newPod("", nil, never, present, always)
	r := h.sync(pod)
	s := step(t, r, "never")
	require.ErrorIs(t, s.Err, podsync.ErrImageNeverPull)
	assert.Equal(t, `Container image "example.com/absent:1" is not present with pull policy of Never`, s.Message)
	require.NoError(t, step(t, r, "present").Err)
	require.NoError(t, step(t, r, "always").Err)
	assert.Len(t, h.rt.CallsOf(fake.PullImage), 1, "only the Always container pulls")

	for img, want := range map[string]v1.PullPolicy{"busybox": v1.PullAlways, "busybox:latest": v1.PullAlways,
		"busybox:1": v1.PullIfNotPresent, "localhost:5000/busybox": v1.PullAlways, "busybox@sha256:abc": v1.PullIfNotPresent} {
		assert.Equal(t, want, podsync.PullPolicy(&v1.Container{Image: img}), img)
	}
}

// TestSyncPodImageChecks: what happens before a pull, as upstream's image
// manager does it: a reference that does not parse, a runtime that cannot
// say whether the image is there, and pull policy Always, which asks
// nothing before it pulls.
func TestSyncPodImageChecks(t *testing.T) {
	h := newHarness(t)
	invalid := v1.Container{Name: "invalid", Image: "docker.io/Local/BusyBox:1"}
	empty := v1.Container{Name: "empty"}
	r := h.sync(newPod("", nil, invalid, empty, ctr("good")))
	for name, msg := range map[string]string{
		"invalid": `Failed to apply default image tag "docker.io/Local/BusyBox:1": couldn't parse image name "docker.io/Local/BusyBox:1": invalid reference format: repository name (Local/BusyBox) must be lowercase`,
		"empty":   `Failed to apply default image tag "": couldn't parse image name "": invalid reference format`,
	} {
		s := step(t, r, name)
		require.ErrorIs(t, s.Err, podsync.ErrInvalidImageName, name)
		assert.Equal(t, podsync.ReasonInvalidImageName, s.Reason, name)
		assert.Equal(t, msg, s.Message, name)
		assert.Contains(t, h.rec.Strings(), "Warning InspectFailed "+msg)
	}
	require.NoError(t, step(t, r, "good").Err)
	assert.Contains(t, h.rec.Strings(), "Warning Failed Error: InvalidImageName")
	for _, c := range h.rt.CallsOf(fake.ImageStatus) {
		assert.NotContains(t, c.Request.(*runtimeapi.ImageStatusRequest).GetImage().GetImage(), "BusyBox", "an invalid reference never reaches the runtime")
	}

	h = newHarness(t)
	h.rt.InjectFault(fake.ImageStatus, fake.Fault{Err: errors.New("store locked"), Times: 1})
	s := step(t, h.sync(newPod("", nil, ctr("app"))), "app")
	require.ErrorIs(t, s.Err, podsync.ErrImageInspect)
	assert.Equal(t, podsync.ReasonImageInspectError, s.Reason)
	// (The fake's error is not a gRPC status, so its whole text is the
	// runtime's message.)
	assert.Equal(t, `Failed to inspect image "busybox:1": ImageStatus: injected fault: store locked`, s.Message)
	assert.Contains(t, h.rec.Strings(), "Warning InspectFailed "+s.Message)
	assert.Contains(t, h.rec.Strings(), "Warning Failed Error: ImageInspectError")

	h = newHarness(t)
	always := v1.Container{Name: "always", Image: "busybox:1", ImagePullPolicy: v1.PullAlways}
	require.NoError(t, step(t, h.sync(newPod("", nil, always)), "always").Err)
	assert.Empty(t, h.rt.CallsOf(fake.ImageStatus), "Always pulls without asking first")
	assert.Len(t, h.rt.CallsOf(fake.PullImage), 1)
}

func TestSyncPodBadInput(t *testing.T) {
	h := newHarness(t)
	bad := ctr("bad")
	bad.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	badEnv := ctr("badenv")
	badEnv.Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nope"}}}}
	pod := newPod("", nil, bad, badEnv, ctr("good"))
	r := h.sync(pod)
	s := step(t, r, "bad")
	require.ErrorIs(t, s.Err, podsync.ErrCreateContainerConfig)
	assert.Contains(t, s.Message, `volume "data" is not mounted`)
	s = step(t, r, "badenv")
	require.ErrorIs(t, s.Err, podsync.ErrCreateContainerConfig)
	assert.Contains(t, s.Message, `unsupported fieldRef "spec.nope"`)
	require.NoError(t, step(t, r, "good").Err, "one broken container does not block the others")
	w, _ := h.s.WaitingReason("uid-1", "bad")
	assert.Equal(t, podsync.ReasonCreateContainerConfigError, w.Reason)

	for _, p := range []*v1.Pod{nil, newPod("", nil)} {
		r := h.s.SyncPod(context.Background(), p, nil)
		assert.ErrorIs(t, r.Err(), podsync.ErrInvalidPod)
	}

	// A start failure is RunContainerError.
	h.rt.SetRules([]fake.Rule{{Command: []string{"nope"}, Behavior: fake.Behavior{Outcome: fake.FailStart}}})
	p2 := newPod("", nil, v1.Container{Name: "x", Image: "busybox:1", Command: []string{"nope"}})
	p2.UID, p2.Name = "uid-2", "other"
	s = step(t, h.sync(p2), "x")
	require.ErrorIs(t, s.Err, podsync.ErrRunContainer)
	assert.Equal(t, podsync.ReasonRunContainerError, s.Reason)
}

func TestSyncPodCtxBoundsHungCalls(t *testing.T) {
	h := newHarness(t)
	h.rt.SetPullBehavior("example.com/slow:1", fake.PullBehavior{Latency: time.Hour})
	pod := newPod("", nil, v1.Container{Name: "app", Image: "example.com/slow:1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan podsync.Result)
	go func() { done <- h.s.SyncPod(ctx, pod, nil) }()
	deadline := time.Now().Add(10 * time.Second)
	for !h.clk.HasWaiters() { // the pull waits on the runtime's clock
		require.True(t, time.Now().Before(deadline), "pull never started")
		runtimeGosched()
	}
	cancel()
	r := <-done
	s := step(t, r, "app")
	require.ErrorIs(t, s.Err, podsync.ErrImagePull)
	assert.ErrorIs(t, s.Err, context.Canceled)
}

func runtimeGosched() { goruntime.Gosched() }

func TestNewNeedsRuntime(t *testing.T) {
	_, err := podsync.New(podsync.Options{})
	assert.ErrorIs(t, err, podsync.ErrMissingDependency)
}

func TestNewRefusesAConfigItCannotUse(t *testing.T) {
	rt := fake.New(fake.Options{})
	t.Cleanup(rt.Close)
	_, err := podsync.New(podsync.Options{Runtime: rt, Config: containerconfig.Options{HostIPs: []string{"node-1"}}})
	assert.ErrorIs(t, err, containerconfig.ErrInvalidOptions)
}

// An ephemeral container added to a running pod starts once, in the
// target's process namespace when it names one; it is never restarted nor
// killed as a container outside the spec.
func TestSyncPodEphemeralContainer(t *testing.T) {
	h := newHarness(t, exitRule(0, time.Second))
	pod := newPod("", nil, ctr("app"))
	require.NoError(t, h.sync(pod).Err())
	appID := h.status(pod).ContainerByName("app").GetId()

	dbg := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1", Command: []string{"sh", "-c", "exit 0"}}, TargetContainerName: "app"}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{dbg}
	assert.Equal(t, []int{0}, podsync.ComputeActions(pod, h.status(pod), podsync.Probes{}).EphemeralContainersToStart)
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod).ContainerByName("debugger")
	require.NotNil(t, st)
	assert.Equal(t, cri.ContainerTypeEphemeral, st.GetAnnotations()[cri.ContainerTypeAnnotation])
	var created *runtimeapi.CreateContainerRequest
	for _, c := range h.rt.CallsOf(fake.CreateContainer) {
		if r := c.Request.(*runtimeapi.CreateContainerRequest); r.GetConfig().GetMetadata().GetName() == "debugger" {
			created = r
		}
	}
	require.NotNil(t, created)
	ns := created.GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions()
	assert.Equal(t, runtimeapi.NamespaceMode_TARGET, ns.GetPid())
	assert.Equal(t, appID, ns.GetTargetId())

	h.clk.Step(2 * time.Second) // it exits
	a := podsync.ComputeActions(pod, h.status(pod), podsync.Probes{})
	assert.Empty(t, a.EphemeralContainersToStart, "never restarted")
	assert.Empty(t, a.ContainersToKill)
}
