package podworkers_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/podworkers/podworkerstest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: ptr[int64](30)},
	}
}

func staticPod(uid, name string) *v1.Pod {
	p := newPod(uid)
	p.Name = name
	p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	return p
}

// deadline bounds a wait in a test; nothing in these tests sleeps.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type env struct {
	w      *podworkers.Workers
	clock  *clocktesting.FakeClock
	syncer *podworkerstest.Syncer
	waiter *podworkerstest.StatusWaiter
}

// start builds Workers on a fake clock with jitter pinned to zero and runs
// them until the test ends.
func start(t *testing.T, syncer *podworkerstest.Syncer, mod func(*podworkers.Options)) *env {
	t.Helper()
	e := &env{clock: clocktesting.NewFakeClock(epoch), syncer: syncer, waiter: &podworkerstest.StatusWaiter{}}
	opts := podworkers.Options{
		Syncer:       syncer,
		StatusWaiter: e.waiter,
		Clock:        e.clock,
		Machine:      podworkers.MachineOptions{Rand: func() float64 { return 0 }},
	}
	if mod != nil {
		mod(&opts)
	}
	w, err := podworkers.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := syncer.Verify(); err != nil {
			t.Errorf("syncer contract: %v", err)
		}
	})
	return e
}

func (e *env) idle(t *testing.T) {
	t.Helper()
	if err := e.w.WaitIdle(deadline(t)); err != nil {
		t.Fatal(err)
	}
}

func describe(calls []podworkerstest.Call) string {
	s := make([]string, len(calls))
	for i, c := range calls {
		s[i] = c.String()
	}
	return strings.Join(s, "\n")
}

func wantCalls(t *testing.T, got []podworkerstest.Call, want ...string) {
	t.Helper()
	if g, w := describe(got), strings.Join(want, "\n"); g != w {
		t.Fatalf("calls:\n%s\nwant:\n%s", g, w)
	}
}

func TestNew(t *testing.T) {
	syncer := &podworkerstest.Syncer{}
	waiter := &podworkerstest.StatusWaiter{}
	tests := []struct {
		name    string
		opts    podworkers.Options
		wantErr error
	}{
		{name: "minimal", opts: podworkers.Options{Syncer: syncer, StatusWaiter: waiter}},
		{name: "no syncer", opts: podworkers.Options{StatusWaiter: waiter}, wantErr: podworkers.ErrMissingDependency},
		{name: "no status waiter", opts: podworkers.Options{Syncer: syncer}, wantErr: podworkers.ErrMissingDependency},
		{name: "negative tick", opts: podworkers.Options{Syncer: syncer, StatusWaiter: waiter, ResyncTick: -1}, wantErr: podworkers.ErrInvalidOptions},
		{name: "negative resync", opts: podworkers.Options{Syncer: syncer, StatusWaiter: waiter,
			Machine: podworkers.MachineOptions{ResyncInterval: -1}}, wantErr: podworkers.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := podworkers.New(tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New() error = %v, want %v", err, tt.wantErr)
			}
			if (w == nil) == (err == nil) {
				t.Fatalf("New() = %v, %v", w, err)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	e := start(t, &podworkerstest.Syncer{}, nil)
	pod := newPod("a")

	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	e.idle(t)
	wantCalls(t, e.syncer.Calls(), "SyncPod a type=create -> ok")

	// The resync is due a minute after the sync; the tick after it replays it.
	e.clock.Step(time.Minute)
	if err := e.syncer.Wait(deadline(t), func(c []podworkerstest.Call) bool { return len(c) == 2 }); err != nil {
		t.Fatal(err)
	}
	e.idle(t)

	if err := e.w.KillPod(deadline(t), pod, podworkers.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr[int64](5)}); err != nil {
		t.Fatal(err)
	}
	if !e.w.IsPodKnownTerminated("a") || e.w.CouldHaveRunningContainers("a") {
		t.Error("KillPod returned before the pod was terminated")
	}
	e.idle(t)
	wantCalls(t, e.syncer.Calls(),
		"SyncPod a type=create -> ok",
		"SyncPod a type=sync -> ok",
		"SyncTerminatingPod a grace=5 -> ok",
		"SyncTerminatedPod a -> ok")
	if st, _ := e.w.State("a"); st != podworkers.StateFinished || !e.w.ShouldPodBeFinished("a") {
		t.Errorf("state = %s, want finished", st)
	}

	// Each sync waited for a runtime status newer than the previous one.
	waits := e.waiter.Waits()
	if len(waits) != 4 || !waits[0].NewerThan.IsZero() || !waits[1].NewerThan.Equal(epoch) {
		t.Errorf("waits = %+v", waits)
	}

	// Finished: more updates are ignored, a second kill returns at once.
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod})
	if err := e.w.KillPod(deadline(t), pod, podworkers.KillPodOptions{}); err != nil {
		t.Fatal(err)
	}
	e.idle(t)
	if n := len(e.syncer.Calls()); n != 4 {
		t.Errorf("%d calls after the pod finished, want 4", n)
	}
	if known := e.w.SyncKnownPods(nil); len(known) != 0 || e.w.IsPodKnownToWorker("a") {
		t.Errorf("SyncKnownPods kept %v", known)
	}
}

func TestCoalescing(t *testing.T) {
	release := make(chan struct{})
	syncer := &podworkerstest.Syncer{}
	var first sync.Once
	syncer.Funcs.SyncPodFunc = func(ctx context.Context, _ podworkers.UpdateType, _, _ *v1.Pod) (bool, error) {
		block := false
		first.Do(func() { block = true })
		if block {
			<-release
		}
		return false, nil
	}
	e := start(t, syncer, nil)
	pod := newPod("a")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	if err := syncer.WaitRunning(deadline(t), "a", podworkers.WorkSync); err != nil {
		t.Fatal(err)
	}
	mirror := newPod("m")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod, MirrorPod: mirror})
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, Pod: pod})
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod})
	close(release)
	e.idle(t)
	calls := syncer.Calls()
	wantCalls(t, calls, "SyncPod a type=create -> ok", "SyncPod a type=update -> ok")
	if calls[1].MirrorPod != mirror {
		t.Errorf("mirror pod of the coalesced update lost")
	}
}

// blockUntilCancelled makes a sync method wait for its ctx.
func blockUntilCancelled(ctx context.Context) error {
	<-ctx.Done()
	return fmt.Errorf("blocked: %w", ctx.Err())
}

func TestTerminationCancelsSync(t *testing.T) {
	tests := []struct {
		name string
		stop func(e *env, pod *v1.Pod)
	}{
		{name: "kill", stop: func(e *env, pod *v1.Pod) {
			e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: pod})
		}},
		{name: "deletion", stop: func(e *env, pod *v1.Pod) {
			p := pod.DeepCopy()
			p.DeletionTimestamp = &metav1.Time{Time: epoch}
			p.DeletionGracePeriodSeconds = ptr[int64](30)
			e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: p})
		}},
		{name: "orphaned by housekeeping", stop: func(e *env, _ *v1.Pod) {
			e.w.SyncKnownPods(nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syncer := &podworkerstest.Syncer{}
			syncer.Funcs.SyncPodFunc = func(ctx context.Context, _ podworkers.UpdateType, _, _ *v1.Pod) (bool, error) {
				return false, blockUntilCancelled(ctx)
			}
			e := start(t, syncer, nil)
			pod := newPod("a")
			e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
			if err := syncer.WaitRunning(deadline(t), "a", podworkers.WorkSync); err != nil {
				t.Fatal(err)
			}
			tt.stop(e, pod)
			e.idle(t)
			wantCalls(t, syncer.Calls(),
				"SyncPod a type=create -> err: blocked: context canceled",
				"SyncTerminatingPod a grace=30 -> ok",
				"SyncTerminatedPod a -> ok")
		})
	}
}

func TestShorterGraceCancelsTermination(t *testing.T) {
	syncer := &podworkerstest.Syncer{}
	syncer.Funcs.SyncTerminatingPodFunc = func(ctx context.Context, _ *v1.Pod, grace int64, _ podworkers.PodStatusFunc) error {
		if grace > 5 {
			return blockUntilCancelled(ctx)
		}
		return nil
	}
	e := start(t, syncer, nil)
	pod := newPod("a")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	e.idle(t)
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: pod})
	if err := syncer.WaitRunning(deadline(t), "a", podworkers.WorkTerminating); err != nil {
		t.Fatal(err)
	}
	// A longer grace period changes nothing; a shorter one cancels.
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: pod,
		KillPodOptions: podworkers.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr[int64](60)}})
	evicted := func(s *v1.PodStatus) { s.Reason = "Evicted" }
	if err := e.w.KillPod(deadline(t), pod, podworkers.KillPodOptions{Evict: true, PodStatusFunc: evicted,
		PodTerminationGracePeriodSecondsOverride: ptr[int64](5)}); err != nil {
		t.Fatal(err)
	}
	e.idle(t)
	calls := syncer.Calls()
	wantCalls(t, calls,
		"SyncPod a type=create -> ok",
		"SyncTerminatingPod a grace=30 -> err: blocked: context canceled",
		"SyncTerminatingPod a grace=5 -> ok",
		"SyncTerminatedPod a -> ok")
	var st v1.PodStatus
	calls[2].StatusFunc(&st)
	if st.Reason != "Evicted" || !e.w.ShouldPodContentBeRemoved("a") {
		t.Errorf("eviction not applied: reason %q", st.Reason)
	}
}

func TestKillPodStops(t *testing.T) {
	syncer := &podworkerstest.Syncer{}
	syncer.Funcs.SyncTerminatingPodFunc = func(ctx context.Context, _ *v1.Pod, _ int64, _ podworkers.PodStatusFunc) error {
		return blockUntilCancelled(ctx)
	}
	e := start(t, syncer, nil)
	pod := newPod("a")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.w.KillPod(ctx, pod, podworkers.KillPodOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("KillPod with a cancelled ctx = %v", err)
	}
	if err := e.w.KillPod(context.Background(), nil, podworkers.KillPodOptions{}); !errors.Is(err, podworkers.ErrInvalidUpdate) {
		t.Fatalf("KillPod(nil) = %v", err)
	}
}

func TestStoppedWorkers(t *testing.T) {
	w, err := podworkers.New(podworkers.Options{Syncer: &podworkerstest.Syncer{}, StatusWaiter: &podworkerstest.StatusWaiter{},
		Clock: clocktesting.NewFakeClock(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := w.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
	if err := w.KillPod(context.Background(), newPod("a"), podworkers.KillPodOptions{}); !errors.Is(err, podworkers.ErrStopped) {
		t.Errorf("KillPod after Run = %v", err)
	}
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("b")})
	if err := w.WaitIdle(context.Background()); err != nil {
		t.Errorf("WaitIdle after Run = %v", err)
	}
}

func TestUpdatesBeforeRun(t *testing.T) {
	syncer := &podworkerstest.Syncer{}
	w, err := podworkers.New(podworkers.Options{Syncer: syncer, StatusWaiter: &podworkerstest.StatusWaiter{},
		Clock: clocktesting.NewFakeClock(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("a")})
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("b")})
	if n := len(syncer.Calls()); n != 0 {
		t.Fatalf("%d calls before Run", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if err := w.WaitIdle(deadline(t)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(syncer.Calls()); n != 2 {
		t.Fatalf("%d calls after Run, want 2", n)
	}
}

func TestStatusWaiterErrorBacksOff(t *testing.T) {
	e := start(t, &podworkerstest.Syncer{}, nil)
	var calls int
	e.waiter.Func = func(ctx context.Context, _ types.UID, _ time.Time) error {
		calls++
		if calls == 1 {
			return errors.New("cache not ready")
		}
		return nil
	}
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("a")})
	e.idle(t)
	if n := len(e.syncer.Calls()); n != 0 {
		t.Fatalf("SyncPod ran although the status wait failed")
	}
	e.clock.Step(10 * time.Second)
	if err := e.syncer.Wait(deadline(t), func(c []podworkerstest.Call) bool { return len(c) == 1 }); err != nil {
		t.Fatal(err)
	}
	e.idle(t)
	wantCalls(t, e.syncer.Calls(), "SyncPod a type=sync -> ok")
}

func TestRuntimePodSkipsStatusWait(t *testing.T) {
	e := start(t, &podworkerstest.Syncer{}, nil)
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, RunningPod: newPod("x")})
	e.idle(t)
	wantCalls(t, e.syncer.Calls(), "SyncTerminatingRuntimePod x -> ok")
	if len(e.waiter.Waits()) != 0 || e.w.IsPodKnownToWorker("x") {
		t.Errorf("waits %v, known %v", e.waiter.Waits(), e.w.IsPodKnownToWorker("x"))
	}
	// Malformed updates are dropped.
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, RunningPod: newPod("y")})
	e.w.UpdatePod(podworkers.UpdatePodOptions{})
	e.idle(t)
	if e.w.IsPodKnownToWorker("y") {
		t.Error("a running pod was synced")
	}
}

func TestStaticPodsStartInOrder(t *testing.T) {
	e := start(t, &podworkerstest.Syncer{}, nil)
	old := staticPod("s1", "etcd")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: old})
	e.idle(t)
	for _, uid := range []string{"s2", "s3"} {
		e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: staticPod(uid, "etcd")})
	}
	e.idle(t)
	if n := len(e.syncer.Calls()); n != 1 {
		t.Fatalf("a same-name static pod started while the first runs: %s", describe(e.syncer.Calls()))
	}
	if err := e.w.KillPod(deadline(t), old, podworkers.KillPodOptions{}); err != nil {
		t.Fatal(err)
	}
	e.idle(t)
	wantCalls(t, e.syncer.Calls(),
		"SyncPod s1 type=create -> ok",
		"SyncTerminatingPod s1 grace=30 -> ok",
		"SyncTerminatedPod s1 -> ok",
		"SyncPod s2 type=create -> ok")
	if e.w.IsPodForMirrorPodTerminatingByFullName("etcd_default") {
		t.Error("mirror pod reported terminating")
	}
}

// TestMetrics checks what the workers observe: each Syncer call with the
// type of the update it took, measured from the update's StartTime when it
// has one (upstream's kubelet_pod_worker_duration_seconds), and kept across
// the phase changes the update caused; a kill without a StartTime (upstream's
// runtime-only kills and evictions) is not measured from any start.
func TestMetrics(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	metrics := podworkers.MetricsFunc(func(o podworkers.WorkObservation) {
		mu.Lock()
		defer mu.Unlock()
		line := o.Kind.String() + " " + o.UpdateType.String()
		if o.Started {
			line += " since " + o.SinceStart.String()
		}
		got = append(got, line)
	})
	e := start(t, &podworkerstest.Syncer{}, func(o *podworkers.Options) { o.Metrics = metrics })
	done := newPod("done")
	done.Status.Phase = v1.PodSucceeded
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: done, StartTime: e.clock.Now().Add(-2 * time.Second)})
	e.idle(t)
	orphan := newPod("orphan")
	e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, RunningPod: orphan})
	e.idle(t)
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"SyncTerminatingPod create since 2s",
		"SyncTerminatedPod create since 2s",
		"SyncTerminatingRuntimePod kill",
	}
	if !slices.Equal(got, want) {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConcurrentUpdates hammers the workers from many goroutines with
// updates, kills and housekeeping, with a Syncer that fails at random, then
// drives every pod out and checks the Syncer contract. Run it with -race.
func TestConcurrentUpdates(t *testing.T) {
	const (
		pods    = 64
		senders = 8
		rounds  = 500
	)
	syncer := &podworkerstest.Syncer{}
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	fail := func() error {
		rngMu.Lock()
		defer rngMu.Unlock()
		if rng.IntN(5) == 0 {
			return errors.New("random failure")
		}
		return nil
	}
	syncer.Funcs.SyncPodFunc = func(ctx context.Context, _ podworkers.UpdateType, _, _ *v1.Pod) (bool, error) {
		runtime.Gosched()
		return false, fail()
	}
	syncer.Funcs.SyncTerminatingPodFunc = func(ctx context.Context, _ *v1.Pod, _ int64, _ podworkers.PodStatusFunc) error {
		runtime.Gosched()
		return fail()
	}
	syncer.Funcs.SyncTerminatedPodFunc = func(ctx context.Context, _ *v1.Pod) error {
		return fail()
	}
	e := start(t, syncer, nil)
	all := make([]*v1.Pod, pods)
	for i := range all {
		if i%4 == 0 {
			all[i] = staticPod(fmt.Sprintf("p%d", i), fmt.Sprintf("static-%d", i%8))
		} else {
			all[i] = newPod(fmt.Sprintf("p%d", i))
		}
	}
	for _, p := range all {
		e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: p})
	}
	// Creates are not repeated: a create for a terminating UID would restart
	// it, which the fake's order check cannot tell from a bug.
	types := []podworkers.UpdateType{podworkers.SyncPodUpdate, podworkers.SyncPodSync}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 7))
			for range rounds {
				p := all[r.IntN(pods)]
				switch r.IntN(10) {
				case 0:
					e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: p,
						KillPodOptions: podworkers.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr(int64(r.IntN(30)))}})
				case 1:
					e.w.SyncKnownPods(all)
				case 2:
					e.w.IsPodTerminationRequested(p.UID)
				default:
					e.w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: types[r.IntN(len(types))], Pod: p})
				}
			}
		}()
	}
	wg.Wait()
	// Drive everything out: failed work is retried by the resync tick.
	ctx := deadline(t)
	for len(e.w.SyncKnownPods(nil)) > 0 {
		if err := e.w.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		e.clock.Step(15 * time.Second)
	}
	e.idle(t)
	for _, p := range all {
		if e.w.CouldHaveRunningContainers(p.UID) {
			t.Errorf("pod %s could still run", p.UID)
		}
		// Every pod that ran was cleaned up; a static pod killed while it
		// waited for its name never ran.
		calls := syncer.CallsFor(p.UID)
		if n := len(calls); n > 0 && (calls[n-1].Method != podworkers.WorkTerminated || calls[n-1].Err != nil) {
			t.Errorf("pod %s: last call %s", p.UID, calls[n-1])
		}
	}
}

// Terminated is called once a pod's termination succeeded, after which the
// workers say its containers cannot run.
func TestTerminatedHook(t *testing.T) {
	syncer := &podworkerstest.Syncer{}
	type call struct {
		uid   types.UID
		could bool
	}
	calls := make(chan call, 4)
	var w *podworkers.Workers
	e := start(t, syncer, func(o *podworkers.Options) {
		o.Terminated = func(uid types.UID) { calls <- call{uid, w.CouldHaveRunningContainers(uid)} }
	})
	w = e.w
	pod := newPod("a")
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	if err := w.KillPod(context.Background(), pod, podworkers.KillPodOptions{}); err != nil {
		t.Fatalf("KillPod = %v", err)
	}
	select {
	case c := <-calls:
		if c.uid != pod.UID || c.could {
			t.Errorf("Terminated(%s) with CouldHaveRunningContainers %v, want (%s, false)", c.uid, c.could, pod.UID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Terminated was not called")
	}
	if err := w.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-calls:
		t.Errorf("Terminated called again: %v", c)
	default:
	}
}

// A starting pod's SyncPod holds a slot of the start gate, which its
// context carries; a pod that has started holds none.
func TestStartGateAroundStartingSyncs(t *testing.T) {
	if _, err := podworkers.New(podworkers.Options{Syncer: &podworkerstest.Syncer{}, StatusWaiter: &podworkerstest.StatusWaiter{},
		StartGate: podworkers.NewStartGate(1)}); !errors.Is(err, podworkers.ErrInvalidOptions) {
		t.Fatalf("a gate without Starting: %v", err)
	}
	held := map[types.UID]bool{}
	var mu sync.Mutex
	syncer := podworkers.SyncerFuncs{SyncPodFunc: func(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		held[pod.UID] = podworkers.TicketFromContext(ctx) != nil
		return false, nil
	}}
	w, err := podworkers.New(podworkers.Options{Syncer: syncer, StatusWaiter: &podworkerstest.StatusWaiter{},
		Clock: clocktesting.NewFakeClock(epoch), StartGate: podworkers.NewStartGate(1),
		Starting: func(uid types.UID) (uint64, bool) { return 1, uid == newPod("new").UID }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("new")})
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: newPod("old")})
	if err := w.WaitIdle(deadline(t)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !held[newPod("new").UID] || held[newPod("old").UID] {
		t.Fatalf("slots held: %v, want the starting pod's only", held)
	}
}
