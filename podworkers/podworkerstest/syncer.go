package podworkerstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podworkers"
)

// Call is one call to the fake Syncer.
type Call struct {
	// Method is the method called, as the kind of work it does.
	Method podworkers.WorkKind
	// UID is the pod's UID.
	UID types.UID
	// UpdateType is SyncPod's update type.
	UpdateType podworkers.UpdateType
	// Pod and MirrorPod are the arguments (MirrorPod for SyncPod only).
	Pod, MirrorPod *v1.Pod
	// GracePeriodSeconds is SyncTerminatingPod's grace period.
	GracePeriodSeconds int64
	// StatusFunc is SyncTerminatingPod's status edit, or nil.
	StatusFunc podworkers.PodStatusFunc
	// Terminal is what SyncPod returned.
	Terminal bool
	// Err is what the call returned.
	Err error
}

// String describes the call, e.g. "SyncTerminatingPod a grace=30 -> ok".
func (c Call) String() string {
	s := fmt.Sprintf("%s %s", c.Method, c.UID)
	switch c.Method {
	case podworkers.WorkSync:
		s += " type=" + c.UpdateType.String()
	case podworkers.WorkTerminating:
		s += fmt.Sprintf(" grace=%d", c.GracePeriodSeconds)
	}
	switch {
	case c.Err != nil:
		s += " -> err: " + c.Err.Error()
	case c.Terminal:
		s += " -> terminal"
	default:
		s += " -> ok"
	}
	return s
}

// Syncer is a fake podworkers.Syncer. The zero value is ready to use and
// succeeds at everything. Set Funcs before the workers run to override
// methods.
type Syncer struct {
	// Funcs overrides methods: a non-nil function is called (and its
	// result recorded) instead of succeeding.
	Funcs podworkers.SyncerFuncs

	mu         sync.Mutex
	calls      []Call
	running    map[types.UID]podworkers.WorkKind
	violations []error
	changed    chan struct{} // closed and replaced on every change
}

var _ podworkers.Syncer = (*Syncer)(nil)

// SyncPod records the call and runs Funcs.SyncPodFunc, if set.
func (s *Syncer) SyncPod(ctx context.Context, updateType podworkers.UpdateType, pod, mirrorPod *v1.Pod) (bool, error) {
	c := Call{Method: podworkers.WorkSync, UID: pod.UID, UpdateType: updateType, Pod: pod, MirrorPod: mirrorPod}
	s.begin(c)
	var (
		terminal bool
		err      error
	)
	if f := s.Funcs.SyncPodFunc; f != nil {
		terminal, err = f(ctx, updateType, pod, mirrorPod)
	}
	c.Terminal, c.Err = terminal, err
	s.end(c)
	return terminal, err
}

// SyncTerminatingPod records the call and runs Funcs.SyncTerminatingPodFunc,
// if set.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn podworkers.PodStatusFunc) error {
	c := Call{Method: podworkers.WorkTerminating, UID: pod.UID, Pod: pod, GracePeriodSeconds: gracePeriodSeconds, StatusFunc: statusFn}
	s.begin(c)
	var err error
	if f := s.Funcs.SyncTerminatingPodFunc; f != nil {
		err = f(ctx, pod, gracePeriodSeconds, statusFn)
	}
	c.Err = err
	s.end(c)
	return err
}

// SyncTerminatingRuntimePod records the call and runs
// Funcs.SyncTerminatingRuntimePodFunc, if set.
func (s *Syncer) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	c := Call{Method: podworkers.WorkTerminatingRuntime, UID: pod.UID, Pod: pod}
	s.begin(c)
	var err error
	if f := s.Funcs.SyncTerminatingRuntimePodFunc; f != nil {
		err = f(ctx, pod)
	}
	c.Err = err
	s.end(c)
	return err
}

// SyncTerminatedPod records the call and runs Funcs.SyncTerminatedPodFunc, if
// set.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	c := Call{Method: podworkers.WorkTerminated, UID: pod.UID, Pod: pod}
	s.begin(c)
	var err error
	if f := s.Funcs.SyncTerminatedPodFunc; f != nil {
		err = f(ctx, pod)
	}
	c.Err = err
	s.end(c)
	return err
}

// begin checks the call against the contract before it runs.
func (s *Syncer) begin(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = make(map[types.UID]podworkers.WorkKind)
	}
	if k, ok := s.running[c.UID]; ok {
		s.violations = append(s.violations, fmt.Errorf("pod %s: %s called while %s runs", c.UID, c.Method, k))
	}
	s.running[c.UID] = c.Method
	if err := checkOrder(s.calls, c); err != nil {
		s.violations = append(s.violations, err)
	}
	s.notifyLocked()
}

// end records the finished call.
func (s *Syncer) end(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, c.UID)
	s.calls = append(s.calls, c)
	s.notifyLocked()
}

// checkOrder checks that c may follow the calls already made for its UID. A
// UID may start over after it finished (a static pod with a fixed UID
// re-created) with a SyncPod of type create, or after an orphan known only
// from the runtime was stopped.
func checkOrder(calls []Call, c Call) error {
	var terminating, terminated, finished bool
	restart := func(p Call) {
		if finished && p.Method == podworkers.WorkSync && p.UpdateType == podworkers.SyncPodCreate {
			terminating, terminated, finished = false, false, false
		}
	}
	for _, p := range calls {
		if p.UID != c.UID {
			continue
		}
		restart(p)
		switch p.Method {
		case podworkers.WorkSync:
			if p.Err == nil && p.Terminal {
				terminating = true
			}
		case podworkers.WorkTerminating:
			terminating = true
			if p.Err == nil {
				terminated = true
			}
		case podworkers.WorkTerminatingRuntime:
			if p.Err == nil {
				// The UID is forgotten; a configured pod may reuse it.
				terminating, terminated, finished = false, false, false
			}
		case podworkers.WorkTerminated:
			if p.Err == nil {
				finished = true
			}
		}
	}
	restart(c)
	switch {
	case finished:
		return fmt.Errorf("pod %s: %s called after SyncTerminatedPod succeeded", c.UID, c.Method)
	case c.Method == podworkers.WorkSync && terminating:
		return fmt.Errorf("pod %s: SyncPod called after termination started", c.UID)
	case c.Method == podworkers.WorkTerminating && terminated:
		return fmt.Errorf("pod %s: SyncTerminatingPod called after it succeeded", c.UID)
	case c.Method == podworkers.WorkTerminated && !terminated:
		return fmt.Errorf("pod %s: SyncTerminatedPod called before SyncTerminatingPod succeeded", c.UID)
	}
	return nil
}

func (s *Syncer) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// Calls returns a copy of the completed calls, in the order they returned.
func (s *Syncer) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsFor returns the completed calls for one UID.
func (s *Syncer) CallsFor(uid types.UID) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.UID == uid {
			out = append(out, c)
		}
	}
	return out
}

// Running reports which method, if any, is running for uid.
func (s *Syncer) Running(uid types.UID) (podworkers.WorkKind, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.running[uid]
	return k, ok
}

// Wait blocks until cond, called with the completed calls after every change
// (a call starting or returning), returns true, or ctx ends. cond must not
// call the Syncer's methods.
func (s *Syncer) Wait(ctx context.Context, cond func(calls []Call) bool) error {
	for {
		s.mu.Lock()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ok := cond(s.calls)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for syncer calls: %w", ctx.Err())
		}
	}
}

// WaitRunning blocks until method is running for uid, or ctx ends.
func (s *Syncer) WaitRunning(ctx context.Context, uid types.UID, method podworkers.WorkKind) error {
	return s.Wait(ctx, func([]Call) bool {
		k, ok := s.running[uid]
		return ok && k == method
	})
}

// Verify returns the contract violations seen so far, joined, or nil.
func (s *Syncer) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.violations...)
}

// Wait is one call to the fake StatusWaiter.
type Wait struct {
	// UID is the pod's UID.
	UID types.UID
	// NewerThan is the time the runtime status had to be newer than.
	NewerThan time.Time
}

// StatusWaiter is a fake podworkers.StatusWaiter. The zero value returns at
// once.
type StatusWaiter struct {
	// Func, if set, is called to wait.
	Func podworkers.StatusWaiterFunc

	mu    sync.Mutex
	waits []Wait
}

var _ podworkers.StatusWaiter = (*StatusWaiter)(nil)

// WaitNewerThan records the call, then calls Func if set.
func (w *StatusWaiter) WaitNewerThan(ctx context.Context, uid types.UID, t time.Time) error {
	w.mu.Lock()
	w.waits = append(w.waits, Wait{UID: uid, NewerThan: t})
	w.mu.Unlock()
	if w.Func != nil {
		return w.Func(ctx, uid, t)
	}
	return nil
}

// Waits returns a copy of the recorded waits.
func (w *StatusWaiter) Waits() []Wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Wait(nil), w.waits...)
}
