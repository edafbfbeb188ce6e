package podworkers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func i64(n int64) *int64 { return &n }

func testPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: i64(30)},
	}
}

func TestEffectiveGracePeriod(t *testing.T) {
	withDeletion := func(d int64) *v1.Pod {
		p := testPod("a")
		p.DeletionGracePeriodSeconds = i64(d)
		return p
	}
	noSpec := testPod("a")
	noSpec.Spec.TerminationGracePeriodSeconds = nil
	tests := []struct {
		name          string
		current       int64
		pod           *v1.Pod
		override      *int64
		want          int64
		wantShortened bool
	}{
		{name: "spec when nothing in force", pod: testPod("a"), want: 30},
		{name: "deletion grace beats spec", pod: withDeletion(10), want: 10},
		{name: "override beats spec", pod: testPod("a"), override: i64(5), want: 5},
		{name: "shorter of deletion and override", pod: withDeletion(10), override: i64(3), want: 3},
		{name: "longer override ignored", pod: withDeletion(10), override: i64(60), want: 10},
		{name: "zero floors to one", pod: testPod("a"), override: i64(0), want: 1},
		{name: "negative floors to one", pod: withDeletion(-4), want: 1},
		{name: "no spec floors to one", pod: noSpec, want: 1},
		{name: "nil pod floors to one", want: 1},
		{name: "current kept when nothing shorter", current: 20, pod: testPod("a"), want: 20},
		{name: "never lengthens", current: 20, pod: withDeletion(45), override: i64(60), want: 20},
		{name: "shrinks and says so", current: 20, pod: withDeletion(10), want: 10, wantShortened: true},
		{name: "same value is not shortened", current: 10, pod: withDeletion(10), want: 10},
		{name: "spec does not shrink a current period", current: 40, pod: testPod("a"), want: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, shortened := effectiveGracePeriod(tt.current, tt.pod, tt.override)
			if got != tt.want || shortened != tt.wantShortened {
				t.Errorf("effectiveGracePeriod(%d) = %d, %v; want %d, %v", tt.current, got, shortened, tt.want, tt.wantShortened)
			}
		})
	}
}

func TestNewMachineOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    MachineOptions
		wantErr error
	}{
		{name: "zero value", opts: MachineOptions{}},
		{name: "negative resync", opts: MachineOptions{ResyncInterval: -time.Second}, wantErr: ErrInvalidOptions},
		{name: "negative backoff", opts: MachineOptions{BackOffPeriod: -time.Second}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMachine(tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("NewMachine() error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (m.opts.ResyncInterval != DefaultResyncInterval || m.opts.BackOffPeriod != DefaultBackOffPeriod) {
				t.Errorf("defaults = %s, %s", m.opts.ResyncInterval, m.opts.BackOffPeriod)
			}
		})
	}
}

func newTestMachine(t *testing.T, opts MachineOptions) *Machine {
	t.Helper()
	if opts.Rand == nil {
		opts.Rand = func() float64 { return 0 }
	}
	m, err := NewMachine(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMachineRejectsMisuse(t *testing.T) {
	now := time.Unix(0, 0)
	tests := []struct {
		name    string
		run     func(m *Machine) error
		wantErr error
	}{
		{
			name:    "update without pod",
			run:     func(m *Machine) error { _, err := m.Update(now, UpdatePodOptions{}); return err },
			wantErr: ErrInvalidUpdate,
		},
		{
			name: "running pod not killed",
			run: func(m *Machine) error {
				_, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodUpdate, RunningPod: testPod("a")})
				return err
			},
			wantErr: ErrInvalidUpdate,
		},
		{
			name:    "complete unknown pod",
			run:     func(m *Machine) error { return m.Complete(now, "a", Result{}) },
			wantErr: ErrNoWorkInFlight,
		},
		{
			name: "complete without next",
			run: func(m *Machine) error {
				if _, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
					return err
				}
				return m.Complete(now, "a", Result{})
			},
			wantErr: ErrNoWorkInFlight,
		},
		{
			name: "next while in flight",
			run: func(m *Machine) error {
				if _, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
					return err
				}
				m.Next(now, "a")
				if _, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a")}); err != nil {
					return err
				}
				if _, ok := m.Next(now, "a"); ok {
					return errors.New("second Next handed out work while the first is in flight")
				}
				return nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(newTestMachine(t, MachineOptions{}))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// drive runs the worker of uid to its end with results, returning the kinds
// of work done.
func drive(t *testing.T, m *Machine, now time.Time, uid types.UID, results ...Result) []WorkKind {
	t.Helper()
	var kinds []WorkKind
	for {
		w, ok := m.Next(now, uid)
		if !ok {
			return kinds
		}
		if len(results) == 0 {
			t.Fatalf("pod %s: unexpected %s", uid, w.Kind)
		}
		kinds = append(kinds, w.Kind)
		if err := m.Complete(now, uid, results[0]); err != nil {
			t.Fatal(err)
		}
		results = results[1:]
	}
}

func TestRequeueDelays(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := []struct {
		name   string
		rand   float64
		result Result
		want   time.Duration
	}{
		{name: "success resyncs after the interval", result: Result{}, want: time.Minute},
		{name: "success with jitter", rand: 0.5, result: Result{}, want: 75 * time.Second},
		{name: "error backs off", result: Result{Err: errors.New("boom")}, want: 10 * time.Second},
		{name: "error with jitter", rand: 0.5, result: Result{Err: errors.New("boom")}, want: 12500 * time.Millisecond},
		{name: "retry after overrides backoff", result: Result{Err: fmt.Errorf("sync: %w", RetryAfter(time.Second, errors.New("network not ready")))}, want: time.Second},
		{name: "a back-off is retried when the earliest ends", result: Result{Err: fmt.Errorf("sync: %w", errors.Join(errors.New("other"),
			backoffErr(base.Add(30*time.Second)), fmt.Errorf("start: %w", backoffErr(base.Add(7*time.Second)))))}, want: 7 * time.Second},
		{name: "a back-off with jitter", rand: 0.5, result: Result{Err: backoffErr(base.Add(8 * time.Second))}, want: 10 * time.Second},
		{name: "an ended back-off is retried at once", result: Result{Err: backoffErr(base.Add(-time.Second))}, want: 0},
		{name: "a back-off beyond the resync interval waits the interval", result: Result{Err: backoffErr(base.Add(5 * time.Minute))}, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rand
			m := newTestMachine(t, MachineOptions{Rand: func() float64 { return r }})
			if _, err := m.Update(base, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
				t.Fatal(err)
			}
			m.Ready()
			drive(t, m, base, "a", tt.result)
			if due := m.Resync(base.Add(tt.want - time.Millisecond)); len(due) != 0 {
				t.Fatalf("due early: %v", due)
			}
			if due := m.Resync(base.Add(tt.want)); len(due) != 1 || due[0] != "a" {
				t.Fatalf("Resync at +%s = %v, want [a]", tt.want, due)
			}
			if ready := m.Ready(); len(ready) != 1 {
				t.Fatalf("Ready = %v after the requeue, want [a]", ready)
			}
			w, ok := m.Next(base.Add(tt.want), "a")
			if !ok || w.Kind != WorkSync || w.UpdateType != SyncPodSync {
				t.Fatalf("Next = %+v, %v; want a sync of type sync", w, ok)
			}
		})
	}
}

// backoffErr is a sync error whose back-off ends at until.
type backoffErr time.Time

func (e backoffErr) Error() string                { return "back-off" }
func (e backoffErr) BackoffExpiration() time.Time { return time.Time(e) }

func TestMinBackoffExpiration(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if _, ok := MinBackoffExpiration(errors.New("plain")); ok {
		t.Error("found a back-off in a plain error")
	}
	if _, ok := MinBackoffExpiration(nil); ok {
		t.Error("found a back-off in nil")
	}
	err := errors.Join(fmt.Errorf("a: %w", backoffErr(t0.Add(time.Minute))), errors.Join(errors.New("b"), backoffErr(t0.Add(time.Second))))
	if got, ok := MinBackoffExpiration(err); !ok || !got.Equal(t0.Add(time.Second)) {
		t.Errorf("MinBackoffExpiration = %s, %v; want %s", got, ok, t0.Add(time.Second))
	}
}

func TestRetryAfterError(t *testing.T) {
	inner := errors.New("network not ready")
	err := fmt.Errorf("sync pod a: %w", RetryAfter(time.Second, inner))
	if !errors.Is(err, inner) {
		t.Error("errors.Is does not find the wrapped error")
	}
	var ra *RetryAfterError
	if !errors.As(err, &ra) || ra.Delay != time.Second {
		t.Errorf("errors.As = %v", ra)
	}
	if got, want := err.Error(), "sync pod a: network not ready (retry after 1s)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestResyncOrder(t *testing.T) {
	m := newTestMachine(t, MachineOptions{})
	base := time.Unix(1000, 0)
	// Pods complete their first sync one second apart, in reverse name order.
	uids := []types.UID{"e", "d", "c", "b", "a"}
	for i, uid := range uids {
		now := base.Add(time.Duration(i) * time.Second)
		if _, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(string(uid))}); err != nil {
			t.Fatal(err)
		}
		drive(t, m, now, uid, Result{})
	}
	m.Ready()
	got := m.Resync(base.Add(time.Minute + 2*time.Second))
	want := []types.UID{"e", "d", "c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Resync = %v, want %v", got, want)
	}
	if got := m.Resync(base.Add(time.Hour)); fmt.Sprint(got) != "[b a]" {
		t.Fatalf("second Resync = %v, want [b a]", got)
	}
}

func TestSerializeByFullName(t *testing.T) {
	tests := []struct {
		name        string
		serialize   bool
		wantBlocked bool
	}{
		{name: "api pods run side by side by default", serialize: false, wantBlocked: false},
		{name: "api pods serialized on request", serialize: true, wantBlocked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMachine(t, MachineOptions{SerializeByFullName: tt.serialize})
			now := time.Unix(0, 0)
			old, repl := testPod("old"), testPod("new")
			old.Name, repl.Name = "web", "web"
			for _, p := range []*v1.Pod{old, repl} {
				if _, err := m.Update(now, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: p}); err != nil {
					t.Fatal(err)
				}
			}
			drive(t, m, now, "old", Result{})
			_, ok := m.Next(now, "new")
			if blocked := !ok; blocked != tt.wantBlocked {
				t.Fatalf("new pod blocked = %v, want %v", blocked, tt.wantBlocked)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		got  fmt.Stringer
		want string
	}{
		{SyncPodSync, "sync"}, {SyncPodUpdate, "update"}, {SyncPodCreate, "create"}, {SyncPodKill, "kill"}, {UpdateType(9), "unknown"},
		{StateSyncing, "syncing"}, {StateTerminating, "terminating"}, {StateTerminated, "terminated"}, {StateFinished, "finished"}, {State(9), "unknown"},
		{WorkSync, "SyncPod"}, {WorkTerminating, "SyncTerminatingPod"}, {WorkTerminatingRuntime, "SyncTerminatingRuntimePod"}, {WorkTerminated, "SyncTerminatedPod"}, {WorkKind(9), "unknown"},
	}
	for _, tt := range tests {
		if s := tt.got.String(); s != tt.want {
			t.Errorf("String() = %q, want %q", s, tt.want)
		}
	}
}

func TestPredicatesForUnknownPods(t *testing.T) {
	m := newTestMachine(t, MachineOptions{})
	type answers struct{ couldRun, finished, terminating, runtimeRemovable, contentRemovable, requested, known bool }
	ask := func() answers {
		return answers{
			couldRun:         m.CouldHaveRunningContainers("x"),
			finished:         m.ShouldPodBeFinished("x"),
			terminating:      m.ShouldPodContainersBeTerminating("x"),
			runtimeRemovable: m.ShouldPodRuntimeBeRemoved("x"),
			contentRemovable: m.ShouldPodContentBeRemoved("x"),
			requested:        m.IsPodTerminationRequested("x"),
			known:            m.IsPodKnownTerminated("x") || m.IsPodKnownToWorker("x"),
		}
	}
	if got, want := ask(), (answers{couldRun: true}); got != want {
		t.Errorf("before SyncKnownPods: %+v, want %+v", got, want)
	}
	m.SyncKnownPods(time.Unix(0, 0), nil)
	if got, want := ask(), (answers{finished: true, terminating: true, runtimeRemovable: true, contentRemovable: true}); got != want {
		t.Errorf("after SyncKnownPods: %+v, want %+v", got, want)
	}
}
