package prober_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/prober"
)

type statuses struct {
	mu sync.Mutex
	m  map[types.UID]v1.PodStatus
}

func (s *statuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[uid]
	return st, ok
}

func (s *statuses) set(uid types.UID, st v1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[uid] = st
}

type ran struct {
	c string
	t prober.ProbeType
	r prober.Result
}

type env struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	st      *statuses
	m       *prober.Manager
	ran     chan ran
	mu      sync.Mutex
	results map[prober.ProbeType]prober.Result
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *env {
	e := &env{t: t, clk: clocktesting.NewFakeClock(t0), st: &statuses{m: map[types.UID]v1.PodStatus{}}, ran: make(chan ran, 100),
		results: map[prober.ProbeType]prober.Result{}}
	m, err := prober.New(prober.Options{
		Status: e.st, Clock: e.clk, Workers: 2, Jitter: func(time.Duration) time.Duration { return 0 },
		Runner: prober.ProbeRunnerFunc(func(ctx context.Context, tg prober.Target) (prober.Outcome, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			return prober.Outcome{Result: e.results[tg.Type]}, nil
		}),
		AfterProbe: func(_ types.UID, c string, typ prober.ProbeType, r prober.Result) { e.ran <- ran{c, typ, r} },
	})
	require.NoError(t, err)
	e.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return e
}

func (e *env) setResult(typ prober.ProbeType, r prober.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.results[typ] = r
}

// next waits for the next worker turn (no sleep: a deadline bounds a broken test).
func (e *env) next() ran {
	select {
	case r := <-e.ran:
		return r
	case <-time.After(10 * time.Second):
		e.t.Fatal("no probe ran")
		return ran{}
	}
}

// step advances the clock once the driver is parked on its timer.
func (e *env) step(d time.Duration) {
	deadline := time.Now().Add(10 * time.Second)
	for !e.clk.HasWaiters() {
		require.True(e.t, time.Now().Before(deadline), "driver never parked")
		runtimeGosched()
	}
	e.clk.Step(d)
}

func podWith(c v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func running(id string, started time.Time) v1.PodStatus {
	return v1.PodStatus{PodIP: "10.0.0.1", ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + id,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}
}

func probe(delay, period, success, failure int32) *v1.Probe {
	return &v1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period, SuccessThreshold: success, FailureThreshold: failure,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}}
}

func TestNewMissingDependency(t *testing.T) {
	_, err := prober.New(prober.Options{})
	require.ErrorIs(t, err, prober.ErrMissingDependency)
}

func TestLivenessThresholdAndHold(t *testing.T) {
	e := newEnv(t)
	e.st.set("uid-1", running("c1", t0))
	e.setResult(prober.Liveness, prober.Failure)
	e.m.AddPod(podWith(v1.Container{Name: "app", LivenessProbe: probe(5, 10, 1, 2)}))
	// t=0: inside the initial delay: no probe.
	assert.Equal(t, prober.Unknown, e.next().r)
	r, _ := e.m.Liveness().Get("c1")
	assert.Equal(t, prober.Success, r, "liveness starts presumed passing")
	e.step(10 * time.Second)
	assert.Equal(t, prober.Failure, e.next().r) // 1 of 2
	r, _ = e.m.Liveness().Get("c1")
	assert.Equal(t, prober.Success, r)
	e.step(10 * time.Second)
	assert.Equal(t, prober.Failure, e.next().r) // 2 of 2
	u := <-e.m.Liveness().Updates()
	assert.Equal(t, prober.Update{ContainerID: "c1", Result: prober.Success, PodUID: "uid-1"}, u)
	u = <-e.m.Liveness().Updates()
	assert.Equal(t, prober.Update{ContainerID: "c1", Result: prober.Failure, PodUID: "uid-1"}, u)
	// On hold: no probe run until the container restarts.
	e.step(10 * time.Second)
	assert.Equal(t, prober.Unknown, e.next().r)
	// Restart: new ID, probing resumes after the initial delay.
	e.setResult(prober.Liveness, prober.Success)
	e.st.set("uid-1", running("c2", e.clk.Now().Add(-6*time.Second)))
	e.step(10 * time.Second)
	assert.Equal(t, prober.Success, e.next().r)
	_, ok := e.m.Liveness().Get("c1")
	assert.False(t, ok, "old container's result removed")
}

func TestReadinessFalseUntilSuccessAndStatus(t *testing.T) {
	e := newEnv(t)
	e.st.set("uid-1", running("c1", t0))
	e.setResult(prober.Readiness, prober.Failure)
	pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 2, 0)})
	e.m.AddPod(pod)
	assert.Equal(t, prober.Failure, e.next().r)
	st := running("c1", t0)
	e.m.UpdatePodStatus(pod, &st)
	assert.False(t, st.ContainerStatuses[0].Ready)
	assert.True(t, *st.ContainerStatuses[0].Started)
	assert.Equal(t, prober.Failure, e.next().r, "the run that unready status triggered")
	e.setResult(prober.Readiness, prober.Success)
	e.step(10 * time.Second)
	assert.Equal(t, prober.Success, e.next().r)
	e.m.UpdatePodStatus(pod, &st)
	assert.False(t, st.ContainerStatuses[0].Ready, "success threshold 2")
	assert.Equal(t, prober.Success, e.next().r, "triggered again: the second success")
	e.m.UpdatePodStatus(pod, &st)
	assert.True(t, st.ContainerStatuses[0].Ready)
	e.m.RemovePod(pod)
	_, ok := e.m.Readiness().Get("c1")
	assert.False(t, ok)
}

func TestStartupGating(t *testing.T) {
	e := newEnv(t)
	e.st.set("uid-1", running("c1", t0))
	e.setResult(prober.Startup, prober.Failure)
	e.setResult(prober.Liveness, prober.Success)
	e.setResult(prober.Readiness, prober.Success)
	pod := podWith(v1.Container{Name: "app", StartupProbe: probe(0, 10, 1, 5), LivenessProbe: probe(0, 10, 1, 3), ReadinessProbe: probe(0, 10, 1, 3)})
	e.m.AddPod(pod)
	got := map[prober.ProbeType]prober.Result{}
	for range 3 {
		r := e.next()
		got[r.t] = r.r
	}
	assert.Equal(t, map[prober.ProbeType]prober.Result{prober.Startup: prober.Failure, prober.Liveness: prober.Unknown, prober.Readiness: prober.Unknown}, got)
	st := running("c1", t0)
	e.m.UpdatePodStatus(pod, &st)
	assert.False(t, *st.ContainerStatuses[0].Started)
	assert.False(t, st.ContainerStatuses[0].Ready)
	e.setResult(prober.Startup, prober.Success)
	e.step(10 * time.Second)
	for range 3 {
		r := e.next()
		got[r.t] = r.r
	}
	// Turn order within one instant is not fixed: liveness/readiness may
	// have run before the startup success in this round; run one more.
	e.step(10 * time.Second)
	for range 3 {
		r := e.next()
		got[r.t] = r.r
	}
	assert.Equal(t, map[prober.ProbeType]prober.Result{prober.Startup: prober.Unknown, prober.Liveness: prober.Success, prober.Readiness: prober.Success}, got)
	e.m.UpdatePodStatus(pod, &st)
	assert.True(t, *st.ContainerStatuses[0].Started)
	assert.True(t, st.ContainerStatuses[0].Ready)
}

func TestNoProbesReadyWhenRunning(t *testing.T) {
	e := newEnv(t)
	pod := podWith(v1.Container{Name: "app"})
	e.m.AddPod(pod)
	st := running("c1", t0)
	e.m.UpdatePodStatus(pod, &st)
	assert.True(t, st.ContainerStatuses[0].Ready)
	assert.True(t, *st.ContainerStatuses[0].Started)
	st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}
	e.m.UpdatePodStatus(pod, &st)
	assert.False(t, st.ContainerStatuses[0].Ready)
}

func TestParseContainerID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{{"containerd://abc", "abc", true}, {"abc", "", false}, {"://abc", "", false}, {"docker://", "", false}, {"x://a/../b", "", false}} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := prober.ParseContainerID(tc.in)
			assert.Equal(t, tc.ok, err == nil)
			assert.Equal(t, tc.want, got)
		})
	}
}
