package status_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/statustest"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func apiPod(uid types.UID, name string, policy v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Name: name, Namespace: "ns"},
		Spec:       v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "app", Image: "app:v1"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
}

func runningStatus(ready bool) v1.PodStatus {
	r := v1.ConditionFalse
	if ready {
		r = v1.ConditionTrue
	}
	return v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: r},
			{Type: v1.ContainersReady, Status: r},
		},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", Image: "app:v1", ContainerID: "containerd://c1", Ready: ready,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}},
		}},
	}
}

func terminatedStatus(phase v1.PodPhase, code int32) v1.PodStatus {
	return v1.PodStatus{
		Phase: phase,
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", Image: "app:v1", ContainerID: "containerd://c1",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}},
		}},
	}
}

// harness runs a Manager against a fake sink on a fake clock.
type harness struct {
	t    *testing.T
	m    *status.Manager
	sink *statustest.Sink
	clk  *clocktesting.FakeClock
	ctx  context.Context
	// stop ends Run and waits for it to return: every push it began has
	// then finished, and the Manager has recorded its outcome.
	stop func()
}

func newHarness(t *testing.T, sink *statustest.Sink, mod func(*status.Options)) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	opts := status.Options{Sink: sink, Clock: clk}
	if mod != nil {
		mod(&opts)
	}
	m, err := status.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(wcancel)
	return &harness{t: t, m: m, sink: sink, clk: clk, ctx: wctx, stop: stop}
}

// wait blocks until cond holds for the sink's calls.
func (h *harness) wait(cond func([]statustest.Call) bool) {
	h.t.Helper()
	require.NoError(h.t, h.sink.Wait(h.ctx, cond))
}

// stepUntil advances the fake clock by step until cond holds for the sink's
// calls (a retry needs the Manager to have recorded the failure first, which
// the test cannot see: each step is followed by a short wait for a call).
func (h *harness) stepUntil(step time.Duration, cond func([]statustest.Call) bool) {
	h.t.Helper()
	for h.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
		err := h.sink.Wait(ctx, cond)
		cancel()
		if err == nil {
			return
		}
		h.clk.Step(step)
	}
	h.t.Fatal("condition not met before the deadline")
}

func count(op statustest.Op, uid types.UID, ok bool) func([]statustest.Call) int {
	return func(calls []statustest.Call) int {
		n := 0
		for _, c := range calls {
			if c.Op == op && c.UID == uid && (c.Err == nil) == ok {
				n++
			}
		}
		return n
	}
}

func atLeast(n int, f func([]statustest.Call) int) func([]statustest.Call) bool {
	return func(calls []statustest.Call) bool { return f(calls) >= n }
}

func TestManagerPushesChanges(t *testing.T) {
	sink := &statustest.Sink{}
	pod := apiPod("u1", "web", v1.RestartPolicyAlways)
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue, Reason: "Theirs"}}
	sink.Add(pod)
	resynced := make(chan struct{}, 16)
	h := newHarness(t, sink, func(o *status.Options) {
		o.Pods = status.PodGetterFunc(func(uid types.UID) (*v1.Pod, bool) {
			select {
			case resynced <- struct{}{}:
			default:
			}
			p, ok := sink.Pod("ns", "web")
			return p, ok
		})
	})

	require.NoError(t, h.m.Set(pod, runningStatus(false)))
	h.wait(atLeast(1, count(statustest.OpUpdate, "u1", true)))
	stored, _ := sink.Pod("ns", "web")
	assert.Equal(t, v1.PodRunning, stored.Status.Phase)
	var types []v1.PodConditionType
	for _, c := range stored.Status.Conditions {
		types = append(types, c.Type)
	}
	assert.Equal(t, []v1.PodConditionType{"example.com/lb", v1.PodReady, v1.ContainersReady}, types, "others' conditions are kept")
	assert.True(t, start.Equal(stored.Status.StartTime.Time))

	t.Run("an unchanged status is never pushed again", func(t *testing.T) {
		require.NoError(t, h.m.Set(pod, runningStatus(false)))
		// Three resyncs that looked at the pod (a resync skips a pod whose
		// push is still being recorded, so step until each one did).
		for seen := 0; seen < 3; {
			h.clk.Step(status.DefaultResyncPeriod)
			select {
			case <-resynced:
				seen++
			case <-time.After(20 * time.Millisecond):
			case <-h.ctx.Done():
				t.Fatal("no resync")
			}
		}
		assert.Len(t, sink.CallsOf(statustest.OpUpdate), 1)
	})
	t.Run("readiness change is pushed with a new transition time", func(t *testing.T) {
		h.clk.Step(time.Second)
		h.m.SetContainerReadiness("u1", "c1", true)
		h.wait(atLeast(2, count(statustest.OpUpdate, "u1", true)))
		got, ok := h.m.GetPodStatus("u1")
		require.True(t, ok)
		assert.True(t, got.ContainerStatuses[0].Ready)
		for _, c := range got.Conditions {
			if c.Type == v1.PodReady {
				assert.Equal(t, v1.ConditionTrue, c.Status)
				assert.True(t, h.clk.Now().Equal(c.LastTransitionTime.Time), "moved at the change: %s", c.LastTransitionTime)
			}
		}
	})
	t.Run("a status changed behind our back is pushed again on resync", func(t *testing.T) {
		p, _ := sink.Pod("ns", "web")
		p.Status.Phase = v1.PodPending
		sink.Add(p)
		h.stepUntil(status.DefaultResyncPeriod, atLeast(3, count(statustest.OpUpdate, "u1", true)))
		stored, _ := sink.Pod("ns", "web")
		assert.Equal(t, v1.PodRunning, stored.Status.Phase)
	})
}

func TestManagerRetriesWithBackoff(t *testing.T) {
	var mu sync.Mutex
	var attempts []time.Time
	sink := &statustest.Sink{}
	var clk *clocktesting.FakeClock
	sink.Fail = func(op statustest.Op, pod *v1.Pod) error {
		if op != statustest.OpUpdate {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, clk.Now())
		if len(attempts) <= 3 {
			return errors.New("apiserver unavailable")
		}
		return nil
	}
	pod := apiPod("u1", "web", v1.RestartPolicyAlways)
	sink.Add(pod)
	h := newHarness(t, sink, nil)
	clk = h.clk
	require.NoError(t, h.m.Set(pod, runningStatus(true)))
	h.stepUntil(100*time.Millisecond, atLeast(1, count(statustest.OpUpdate, "u1", true)))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, attempts, 4)
	for i, min := range []time.Duration{status.DefaultRetryBackoff, 2 * status.DefaultRetryBackoff, 4 * status.DefaultRetryBackoff} {
		assert.GreaterOrEqual(t, attempts[i+1].Sub(attempts[i]), min, "wait before attempt %d", i+2)
	}
	stored, _ := sink.Pod("ns", "web")
	assert.Equal(t, v1.PodRunning, stored.Status.Phase)
}

func TestManagerHangingPodDoesNotBlockOthers(t *testing.T) {
	sink := &statustest.Sink{}
	var hang sync.Map
	hang.Store(types.UID("stuck"), true)
	// hanging closes when the stuck pod's first update has begun to hang:
	// the Get before it is no sign that it has.
	hanging := make(chan struct{})
	var once sync.Once
	sink.Hang = func(op statustest.Op, pod *v1.Pod) bool {
		_, ok := hang.Load(pod.UID)
		if op == statustest.OpUpdate && ok {
			once.Do(func() { close(hanging) })
			return true
		}
		return false
	}
	stuck, fine := apiPod("stuck", "stuck", v1.RestartPolicyAlways), apiPod("fine", "fine", v1.RestartPolicyAlways)
	sink.Add(stuck)
	sink.Add(fine)
	h := newHarness(t, sink, nil)
	require.NoError(t, h.m.Set(stuck, runningStatus(true)))
	h.wait(atLeast(1, count(statustest.OpGet, "stuck", true)))
	require.NoError(t, h.m.Set(fine, runningStatus(true)))
	h.wait(atLeast(1, count(statustest.OpUpdate, "fine", true)))

	// The hung push times out on the Manager's clock and is retried.
	<-hanging
	hang.Delete(types.UID("stuck"))
	h.stepUntil(time.Second, atLeast(1, count(statustest.OpUpdate, "stuck", true)))
	calls := count(statustest.OpUpdate, "stuck", false)(sink.Calls())
	assert.Equal(t, 1, calls, "one timed-out attempt before the success")
}

func TestManagerReorderedPushes(t *testing.T) {
	sink := &statustest.Sink{}
	a, b := apiPod("a", "a", v1.RestartPolicyAlways), apiPod("b", "b", v1.RestartPolicyAlways)
	sink.Add(a)
	sink.Add(b)
	h := newHarness(t, sink, nil)
	sink.Hold(true)
	require.NoError(t, h.m.Set(a, runningStatus(false)))
	require.NoError(t, h.m.Set(b, runningStatus(false)))
	require.NoError(t, sink.Wait(h.ctx, func([]statustest.Call) bool { return len(sink.Held()) == 2 }))
	// A newer status for a while its push is held: never two pushes of a
	// pod at once, and the newest one wins.
	require.NoError(t, h.m.Set(a, runningStatus(true)))
	sink.Release("b")
	h.wait(atLeast(1, count(statustest.OpUpdate, "b", true)))
	assert.Equal(t, []types.UID{"a"}, sink.Held())
	sink.Release("a")
	require.NoError(t, sink.Wait(h.ctx, func([]statustest.Call) bool { return len(sink.Held()) == 1 }))
	sink.Hold(false)
	h.wait(atLeast(2, count(statustest.OpUpdate, "a", true)))
	stored, _ := sink.Pod("ns", "a")
	assert.True(t, stored.Status.ContainerStatuses[0].Ready, "the newest status is the one stored")
}

func TestManagerTerminalPods(t *testing.T) {
	deleting := func(uid types.UID, name string) *v1.Pod {
		p := apiPod(uid, name, v1.RestartPolicyNever)
		now := metav1.NewTime(start)
		p.DeletionTimestamp = &now
		return p
	}
	t.Run("terminal phase waits for the containers, then the pod is deleted", func(t *testing.T) {
		sink := &statustest.Sink{}
		pod := deleting("u1", "job")
		pod.Status = runningStatus(true)
		sink.Add(pod)
		h := newHarness(t, sink, nil)
		require.NoError(t, h.m.Set(pod, terminatedStatus(v1.PodSucceeded, 0)))
		h.wait(atLeast(1, count(statustest.OpUpdate, "u1", true)))
		stored, _ := sink.Pod("ns", "job")
		assert.Equal(t, v1.PodRunning, stored.Status.Phase, "not terminal while containers may run")
		assert.Empty(t, sink.CallsOf(statustest.OpDelete))

		h.m.TerminatePod(pod)
		h.wait(atLeast(1, count(statustest.OpDelete, "u1", true)))
		updates := sink.CallsOf(statustest.OpUpdate)
		last := updates[len(updates)-1].Status
		assert.Equal(t, v1.PodSucceeded, last.Phase)
		_, ok := sink.Pod("ns", "job")
		assert.False(t, ok)
		// The sink records the deletion before the Manager forgets the
		// status: once Run has returned, it has.
		h.stop()
		_, ok = h.m.GetPodStatus("u1")
		assert.False(t, ok, "a deleted pod's status is forgotten")
	})
	t.Run("deletion safety lets a terminal status through; the deletion waits for TerminatePod", func(t *testing.T) {
		sink := &statustest.Sink{}
		pod := deleting("u2", "job2")
		sink.Add(pod)
		h := newHarness(t, sink, func(o *status.Options) {
			o.DeletionSafety = status.PodDeletionSafetyFunc(func(types.UID) bool { return false })
		})
		require.NoError(t, h.m.Set(pod, terminatedStatus(v1.PodFailed, 1)))
		h.wait(atLeast(1, count(statustest.OpUpdate, "u2", true)))
		stored, _ := sink.Pod("ns", "job2")
		assert.Equal(t, v1.PodFailed, stored.Status.Phase)
		// As upstream's: a pod is deleted once its worker finished it
		// (SyncTerminatedPod), not as soon as its containers are gone.
		assert.Empty(t, sink.CallsOf(statustest.OpDelete))
		h.m.TerminatePod(pod)
		h.wait(atLeast(1, count(statustest.OpDelete, "u2", true)))
	})
	t.Run("PushAgain writes a terminal phase held back while containers could run", func(t *testing.T) {
		sink := &statustest.Sink{}
		pod := apiPod("u4", "job4", v1.RestartPolicyNever)
		pod.Status = runningStatus(true)
		sink.Add(pod)
		var could atomic.Bool
		could.Store(true)
		h := newHarness(t, sink, func(o *status.Options) {
			o.DeletionSafety = status.PodDeletionSafetyFunc(func(types.UID) bool { return could.Load() })
		})
		require.NoError(t, h.m.Set(pod, terminatedStatus(v1.PodFailed, 1)))
		h.wait(atLeast(1, count(statustest.OpUpdate, "u4", true)))
		stored, _ := sink.Pod("ns", "job4")
		assert.Equal(t, v1.PodRunning, stored.Status.Phase, "held back")
		could.Store(false)
		h.m.PushAgain("u4")
		h.wait(func(calls []statustest.Call) bool {
			p, _ := sink.Pod("ns", "job4")
			return p.Status.Phase == v1.PodFailed
		})
		h.m.PushAgain("unknown") // ignored
	})
	t.Run("TerminatePod marks lost containers and fails the pod", func(t *testing.T) {
		sink := &statustest.Sink{}
		pod := apiPod("u3", "web", v1.RestartPolicyAlways)
		sink.Add(pod)
		h := newHarness(t, sink, nil)
		require.NoError(t, h.m.Set(pod, runningStatus(true)))
		h.m.TerminatePod(pod)
		got, ok := h.m.GetPodStatus("u3")
		require.True(t, ok)
		assert.Equal(t, v1.PodFailed, got.Phase)
		term := got.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, status.ReasonContainerStatusUnknown, term.Reason)
		assert.Equal(t, int32(137), term.ExitCode)
		h.wait(func(calls []statustest.Call) bool {
			for _, c := range calls {
				if c.Op == statustest.OpUpdate && c.Status.Phase == v1.PodFailed {
					for _, cond := range c.Status.Conditions {
						if cond.Type == v1.PodReady {
							return cond.Status == v1.ConditionFalse && cond.Reason == status.ReasonPodFailed
						}
					}
				}
			}
			return false
		})
		assert.Empty(t, sink.CallsOf(statustest.OpDelete), "not deleted: no deletion was requested")
	})
}

func TestManagerStaticAndRecreatedPods(t *testing.T) {
	t.Run("static pod status goes to its mirror pod, which is never deleted", func(t *testing.T) {
		sink := &statustest.Sink{}
		static := apiPod("static-uid", "etcd-node1", v1.RestartPolicyAlways)
		static.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
		mirror := apiPod("mirror-uid", "etcd-node1", v1.RestartPolicyAlways)
		mirror.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "api", podspec.ConfigMirrorAnnotation: "hash"}
		now := metav1.NewTime(start)
		mirror.DeletionTimestamp = &now
		sink.Add(mirror)
		h := newHarness(t, sink, nil)
		h.m.TerminatePod(static)
		h.wait(atLeast(1, count(statustest.OpUpdate, "mirror-uid", true)))
		stored, _ := sink.Pod("ns", "etcd-node1")
		assert.Equal(t, types.UID("mirror-uid"), stored.UID)
		assert.Empty(t, sink.CallsOf(statustest.OpDelete))
	})
	t.Run("static pod without a mirror is tried again on resync only", func(t *testing.T) {
		sink := &statustest.Sink{}
		static := apiPod("static-uid", "etcd-node1", v1.RestartPolicyAlways)
		static.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
		regular := apiPod("static-uid", "etcd-node1", v1.RestartPolicyAlways) // not a mirror
		sink.Add(regular)
		h := newHarness(t, sink, nil)
		require.NoError(t, h.m.Set(static, runningStatus(true)))
		h.wait(atLeast(1, count(statustest.OpGet, "static-uid", true)))
		h.stepUntil(status.DefaultResyncPeriod, atLeast(2, count(statustest.OpGet, "static-uid", true)))
		assert.Empty(t, sink.CallsOf(statustest.OpUpdate))
	})
	t.Run("a mirror pod created after the static pod's status gets it at a resync", func(t *testing.T) {
		sink := &statustest.Sink{}
		static := apiPod("static-uid", "etcd-node1", v1.RestartPolicyAlways)
		static.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
		h := newHarness(t, sink, nil)
		require.NoError(t, h.m.Set(static, runningStatus(true)))
		h.wait(atLeast(1, count(statustest.OpGet, "static-uid", false))) // not found: no mirror yet
		mirror := apiPod("mirror-uid", "etcd-node1", v1.RestartPolicyAlways)
		mirror.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "api", podspec.ConfigMirrorAnnotation: "hash"}
		sink.Add(mirror)
		h.stepUntil(status.DefaultResyncPeriod, atLeast(1, count(statustest.OpUpdate, "mirror-uid", true)))
		stored, _ := sink.Pod("ns", "etcd-node1")
		assert.Equal(t, v1.PodRunning, stored.Status.Phase)
	})
	t.Run("a re-created pod does not get the old pod's status", func(t *testing.T) {
		sink := &statustest.Sink{}
		old := apiPod("old", "web", v1.RestartPolicyAlways)
		sink.Add(apiPod("new", "web", v1.RestartPolicyAlways))
		h := newHarness(t, sink, nil)
		require.NoError(t, h.m.Set(old, runningStatus(true)))
		h.wait(atLeast(1, count(statustest.OpGet, "old", true)))
		h.stepUntil(status.DefaultResyncPeriod, atLeast(2, func(c []statustest.Call) int { return len(c) + 1 }))
		assert.Empty(t, sink.CallsOf(statustest.OpUpdate))
	})
}

func TestManagerSetValidation(t *testing.T) {
	m, err := status.New(status.Options{Sink: &statustest.Sink{}})
	require.NoError(t, err)
	assert.ErrorIs(t, m.Set(nil, v1.PodStatus{}), status.ErrInvalidInput)

	pod := apiPod("u1", "job", v1.RestartPolicyNever)
	require.NoError(t, m.Set(pod, terminatedStatus(v1.PodSucceeded, 0)))
	err = m.Set(pod, runningStatus(true))
	assert.ErrorIs(t, err, status.ErrIllegalTransition)
	assert.ErrorContains(t, err, `"app"`)
	got, _ := m.GetPodStatus("u1")
	assert.NotNil(t, got.ContainerStatuses[0].State.Terminated, "the refused status is not cached")

	onFailure := apiPod("u2", "job", v1.RestartPolicyOnFailure)
	require.NoError(t, m.Set(onFailure, terminatedStatus(v1.PodRunning, 1)))
	assert.NoError(t, m.Set(onFailure, runningStatus(true)), "a failed container may restart under OnFailure")

	t.Run("GetPodStatus returns a copy", func(t *testing.T) {
		a, _ := m.GetPodStatus("u2")
		a.ContainerStatuses[0].Name = "changed"
		b, _ := m.GetPodStatus("u2")
		assert.Equal(t, "app", b.ContainerStatuses[0].Name)
	})
	t.Run("ViewPodStatus lends the cached status", func(t *testing.T) {
		var name string
		assert.True(t, m.ViewPodStatus("u2", func(st *v1.PodStatus) { name = st.ContainerStatuses[0].Name }))
		assert.Equal(t, "app", name)
		assert.False(t, m.ViewPodStatus("nobody", func(*v1.PodStatus) { t.Error("called without a status") }))
	})
	t.Run("termination messages are cut to their share", func(t *testing.T) {
		p := apiPod("u3", "big", v1.RestartPolicyNever)
		st := terminatedStatus(v1.PodFailed, 1)
		st.ContainerStatuses[0].State.Terminated.Message = string(make([]byte, 20000))
		require.NoError(t, m.Set(p, st))
		got, _ := m.GetPodStatus("u3")
		assert.Len(t, got.ContainerStatuses[0].State.Terminated.Message, status.MaxPodTerminationMessageBytes)
	})
}

func TestNewAndRun(t *testing.T) {
	_, err := status.New(status.Options{})
	assert.ErrorIs(t, err, status.ErrInvalidOptions)
	_, err = status.New(status.Options{Sink: &statustest.Sink{}, Workers: -1})
	assert.ErrorIs(t, err, status.ErrInvalidOptions)

	m, err := status.New(status.Options{Sink: &statustest.Sink{}, Clock: clocktesting.NewFakeClock(start)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- m.Run(ctx) }()
	go func() { done <- m.Run(ctx) }()
	// One of the two runs; the other fails at once.
	assert.ErrorContains(t, <-done, "already called")
	cancel()
	assert.NoError(t, <-done)
}

func TestManagerProbeUpdatesAndRemove(t *testing.T) {
	m, err := status.New(status.Options{Sink: &statustest.Sink{}, Clock: clocktesting.NewFakeClock(start)})
	require.NoError(t, err)
	pod := apiPod("u1", "web", v1.RestartPolicyAlways)
	require.NoError(t, m.Set(pod, runningStatus(false)))

	m.SetContainerStartup("u1", "containerd://c1", true)
	got, _ := m.GetPodStatus("u1")
	require.NotNil(t, got.ContainerStatuses[0].Started)
	assert.True(t, *got.ContainerStatuses[0].Started)

	m.SetContainerReadiness("u1", "c1", true)
	got, _ = m.GetPodStatus("u1")
	assert.True(t, got.ContainerStatuses[0].Ready)
	m.SetContainerReadiness("u1", "unknown-id", false)
	m.SetContainerReadiness("nobody", "c1", false)
	got, _ = m.GetPodStatus("u1")
	assert.True(t, got.ContainerStatuses[0].Ready, "unknown containers and pods are ignored")

	stopped := apiPod("u2", "done", v1.RestartPolicyAlways)
	require.NoError(t, m.Set(stopped, terminatedStatus(v1.PodRunning, 0)))
	m.SetContainerReadiness("u2", "c1", true)
	got, _ = m.GetPodStatus("u2")
	assert.False(t, got.ContainerStatuses[0].Ready, "a late success does not make a stopped container ready")

	m.Remove("u1")
	_, ok := m.GetPodStatus("u1")
	assert.False(t, ok)
}

func TestManagerTerminatePodInitContainers(t *testing.T) {
	m, err := status.New(status.Options{Sink: &statustest.Sink{}, Clock: clocktesting.NewFakeClock(start)})
	require.NoError(t, err)
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: status.ReasonPodInitializing}}
	pod := apiPod("u1", "web", v1.RestartPolicyAlways)
	pod.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}, {Name: "i3"}}
	pod.Status = v1.PodStatus{
		Phase: v1.PodPending,
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "i1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}},
			{Name: "i2", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			{Name: "i3", State: waiting},
		},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: waiting}},
	}
	m.TerminatePod(pod)
	got, _ := m.GetPodStatus("u1")
	assert.Equal(t, v1.PodFailed, got.Phase)
	assert.Equal(t, "Completed", got.InitContainerStatuses[0].State.Terminated.Reason, "terminated ones are kept")
	assert.Equal(t, status.ReasonContainerStatusUnknown, got.InitContainerStatuses[1].State.Terminated.Reason, "started ones are marked")
	assert.NotNil(t, got.InitContainerStatuses[2].State.Waiting, "the waiting suffix never started")
	assert.NotNil(t, got.ContainerStatuses[0].State.Waiting, "regular containers untouched before initialization")
	assert.Equal(t, []string{"i1", "i2", "i3"}, []string{got.InitContainerStatuses[0].Name, got.InitContainerStatuses[1].Name, got.InitContainerStatuses[2].Name})
}
