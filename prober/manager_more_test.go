package prober_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/prober/probertest"
)

type harness struct {
	clk *clocktesting.FakeClock
	st  *probertest.Statuses
	run *probertest.Runner
	rec *eventtest.Recorder
	m   *prober.Manager
	ran chan prober.Result
}

func newHarness(t *testing.T, jitter func(time.Duration) time.Duration) *harness {
	h := &harness{clk: clocktesting.NewFakeClock(t0), st: probertest.NewStatuses(), run: probertest.NewRunner(), rec: &eventtest.Recorder{}, ran: make(chan prober.Result, 100)}
	if jitter == nil {
		jitter = func(time.Duration) time.Duration { return 0 }
	}
	m, err := prober.New(prober.Options{Runner: h.run, Status: h.st, Clock: h.clk, Recorder: h.rec, Jitter: jitter,
		AfterProbe: func(_ types.UID, _ string, _ prober.ProbeType, r prober.Result) { h.ran <- r }})
	require.NoError(t, err)
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return h
}

func (h *harness) next(t *testing.T) prober.Result {
	select {
	case r := <-h.ran:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no probe ran")
		return prober.Unknown
	}
}

func TestEventsAndErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.st.Set("uid-1", running("c1", t0))
	h.run.Set("app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "HTTP probe failed with statuscode: 503"}, nil)
	h.run.Set("app", prober.Liveness, prober.Outcome{}, errors.New("no route"))
	h.m.AddPod(podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 1), LivenessProbe: probe(0, 10, 1, 1)}))
	got := map[prober.Result]bool{h.next(t): true, h.next(t): true}
	assert.Equal(t, map[prober.Result]bool{prober.Failure: true, prober.Unknown: true}, got)
	assert.ElementsMatch(t, []string{
		"Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 503",
		"Warning Unhealthy Liveness probe errored: no route",
	}, h.rec.Strings())
	r, _ := h.m.Liveness().Get("c1")
	assert.Equal(t, prober.Success, r, "an errored probe is discarded")
}

func TestNotRunningIsFailureAndMalformedID(t *testing.T) {
	h := newHarness(t, nil)
	st := running("c1", t0)
	st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	h.st.Set("uid-1", st)
	h.m.AddPod(podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 1)}))
	assert.Equal(t, prober.Unknown, h.next(t))
	r, _ := h.m.Readiness().Get("c1")
	assert.Equal(t, prober.Failure, r)
	assert.Empty(t, h.run.Calls())

	h2 := newHarness(t, nil)
	bad := running("c1", t0)
	bad.ContainerStatuses[0].ContainerID = "c1"
	h2.st.Set("uid-1", bad)
	h2.m.AddPod(podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 1)}))
	assert.Equal(t, prober.Unknown, h2.next(t))
	_, ok := h2.m.Readiness().Get("c1")
	assert.False(t, ok)
	assert.Empty(t, h2.run.Calls())
}

func TestCleanupPodsAndJitter(t *testing.T) {
	var mu sync.Mutex
	var periods []time.Duration
	h := newHarness(t, func(p time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		periods = append(periods, p)
		return 3 * time.Second
	})
	for i := range 3 {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 7, 1, 1)})
		pod.UID = uid
		h.st.Set(uid, running(fmt.Sprintf("c%d", i), t0))
		h.m.AddPod(pod)
		h.m.AddPod(pod) // idempotent
	}
	mu.Lock()
	assert.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}, periods)
	mu.Unlock()
	stepWhenParked(t, h.clk, 2*time.Second)
	assert.Empty(t, h.run.Calls(), "not due before the jitter")
	stepWhenParked(t, h.clk, time.Second)
	for range 3 {
		h.next(t)
	}
	h.m.CleanupPods(map[types.UID]struct{}{"uid-1": {}})
	for _, id := range []string{"c0", "c2"} {
		_, ok := h.m.Readiness().Get(id)
		assert.False(t, ok, id)
	}
	_, ok := h.m.Readiness().Get("c1")
	assert.True(t, ok)
	stepWhenParked(t, h.clk, 7*time.Second)
	h.next(t)
	calls := h.run.Calls()
	assert.Len(t, calls, 4)
	assert.Equal(t, types.UID("uid-1"), calls[3].PodUID)
}

func stepWhenParked(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		require.True(t, time.Now().Before(deadline), "driver never parked")
		runtimeGosched()
	}
	clk.Step(d)
}

func TestRunEndsWithUndrainedUpdates(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	st := probertest.NewStatuses()
	m, err := prober.New(prober.Options{Runner: probertest.NewRunner(), Status: st, Clock: clk, Workers: 2,
		Jitter: func(time.Duration) time.Duration { return 0 }})
	require.NoError(t, err)
	for i := range prober.UpdatesBuffer + 5 {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 1)})
		pod.UID = uid
		st.Set(uid, running(fmt.Sprintf("c%d", i), t0))
		m.AddPod(pod)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(m.Readiness().Updates()) < prober.UpdatesBuffer {
		require.True(t, time.Now().Before(deadline))
		runtimeGosched()
	}
	cancel()
	require.NoError(t, <-done) // goleak checks that no worker is left blocked
}

func TestUpdatePodStatusInitContainers(t *testing.T) {
	h := newHarness(t, nil)
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "sidecar", RestartPolicy: &always, ReadinessProbe: probe(0, 10, 1, 1)}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	h.m.AddPod(pod)
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}
	st := v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "init", ContainerID: "containerd://i", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "sidecar", ContainerID: "containerd://s", State: runningState},
		},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://a", State: runningState}},
	}
	h.st.Set("uid-1", st)
	h.m.UpdatePodStatus(pod, &st)
	assert.True(t, st.InitContainerStatuses[0].Ready, "init container exited 0")
	require.NotNil(t, st.InitContainerStatuses[0].Started, "started is reported for init containers too, as upstream")
	assert.False(t, *st.InitContainerStatuses[0].Started, "an init container that exited is not started")
	assert.False(t, st.InitContainerStatuses[1].Ready, "sidecar readiness not yet succeeded")
	assert.True(t, *st.InitContainerStatuses[1].Started)
	assert.True(t, st.ContainerStatuses[0].Ready)
	// The first run, in AddPod, found no status; the next is a period
	// later.
	h.clk.Step(10 * time.Second)
	h.next(t)
	h.m.UpdatePodStatus(pod, &st)
	assert.True(t, st.InitContainerStatuses[1].Ready)
}

// A worker's first run, due at once, is taken in AddPod from the status as
// it is then: a pod added before its container starts is first probed a
// period later, however soon the container shows as running, as upstream's
// worker (started before the pod's sync) first probes it. A container
// already running when its pod is added is probed at once.
func TestFirstRunAtAddPod(t *testing.T) {
	for _, tc := range []struct {
		name         string
		runningFirst bool
		wantAtOnce   bool
	}{
		{name: "container starts after AddPod"},
		{name: "container already running", runningFirst: true, wantAtOnce: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil)
				if tc.runningFirst {
					h.st.Set("uid-1", running("c1", t0))
				}
				h.m.AddPod(podWith(v1.Container{Name: "app", LivenessProbe: probe(0, 10, 1, 1)}))
				h.st.Set("uid-1", running("c1", t0))
				synctest.Wait()
				if tc.wantAtOnce {
					require.Len(t, h.ran, 1, "probed at once")
					<-h.ran
				} else {
					require.Empty(t, h.ran, "nothing to probe when the pod was added")
				}
				h.clk.Step(10 * time.Second)
				synctest.Wait()
				assert.Len(t, h.ran, 1, "probed a period later")
			})
		})
	}
}

// viewingStatuses is a StatusViewer that counts how statuses are read.
type viewingStatuses struct {
	*probertest.Statuses
	mu          sync.Mutex
	gets, views int
}

func (s *viewingStatuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Statuses.GetPodStatus(uid)
}

func (s *viewingStatuses) ViewPodStatus(uid types.UID, f func(*v1.PodStatus)) bool {
	s.mu.Lock()
	s.views++
	s.mu.Unlock()
	st, ok := s.Statuses.GetPodStatus(uid)
	if ok {
		f(&st)
	}
	return ok
}

// A StatusViewer's status is read, not copied, on every probe turn: the
// only copy is AddPod's.
func TestTurnsReadAStatusViewer(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	st := &viewingStatuses{Statuses: probertest.NewStatuses()}
	run := probertest.NewRunner()
	ran := make(chan prober.Result, 10)
	m, err := prober.New(prober.Options{Runner: run, Status: st, Clock: clk, Jitter: func(time.Duration) time.Duration { return 0 },
		AfterProbe: func(_ types.UID, _ string, _ prober.ProbeType, r prober.Result) { ran <- r }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	st.Set("uid-1", running("c1", t0))
	m.AddPod(podWith(v1.Container{Name: "app", LivenessProbe: probe(0, 10, 1, 1)}))
	for i := range 3 {
		if i > 0 {
			stepWhenParked(t, clk, 10*time.Second)
		}
		select {
		case r := <-ran:
			assert.Equal(t, prober.Success, r)
		case <-time.After(10 * time.Second):
			t.Fatal("no probe ran")
		}
	}
	calls := run.Calls()
	require.Len(t, calls, 3)
	assert.Equal(t, "c1", calls[2].ContainerID)
	st.mu.Lock()
	defer st.mu.Unlock()
	assert.Equal(t, 1, st.gets, "AddPod's copy")
	assert.Equal(t, 3, st.views, "one view a turn")
}
