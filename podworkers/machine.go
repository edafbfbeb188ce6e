package podworkers

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's timing.
const (
	// DefaultResyncInterval is how long after a successful sync a pod is
	// synced again (plus up to 50% jitter).
	DefaultResyncInterval = time.Minute
	// DefaultBackOffPeriod is how long after a failed sync a pod is retried
	// (plus up to 50% jitter).
	DefaultBackOffPeriod = 10 * time.Second
	// jitterFactor is the largest fraction of a delay added as jitter.
	jitterFactor = 0.5
)

// MachineOptions configure a Machine. The zero value is upstream's behaviour.
type MachineOptions struct {
	// ResyncInterval is how long after a successful SyncPod the pod is synced
	// again, plus up to 50% jitter. Zero means DefaultResyncInterval (1m).
	ResyncInterval time.Duration
	// BackOffPeriod is how long after a failed sync the pod is retried, plus
	// up to 50% jitter. Zero means DefaultBackOffPeriod (10s). A RetryAfter
	// error overrides it for one retry.
	BackOffPeriod time.Duration
	// Rand returns a pseudo-random number in [0, 1) for jitter. Nil means
	// math/rand/v2's Float64. Tests pass a constant to pin requeue times.
	Rand func() float64
	// SerializeByFullName applies the full-name gate to every pod, not only
	// to static pods: a pod does not start while another pod with the same
	// name and namespace (and a different UID) has started and is not
	// finished. Upstream gates static pods only (false); API pods normally
	// cannot share a name, except after a force deletion.
	SerializeByFullName bool
	// Logger receives debug logs of transitions. Nil means discard.
	Logger *slog.Logger
}

// update is one pending or consumed update.
type update struct {
	updateType UpdateType
	pod        *v1.Pod
	mirrorPod  *v1.Pod
	runtime    bool      // pod is a RunningPod: only its identity is known
	startTime  time.Time // UpdatePodOptions.StartTime
}

// podState is everything the Machine knows about one UID. It is kept until the
// UID is forgotten by SyncKnownPods (or, for a runtime-only pod, until it is
// terminated).
type podState struct {
	uid      types.UID
	fullName string // set when gated
	gated    bool   // subject to the full-name gate
	static   bool

	pending    update // the next update a worker consumes, when hasPending
	hasPending bool
	active     update // the last update consumed, when hasActive
	hasActive  bool

	syncedAt      time.Time // first seen
	startedAt     time.Time // allowed to start
	terminatingAt time.Time // termination requested
	terminatedAt  time.Time // SyncTerminatingPod succeeded
	lastDone      time.Time // previous work completed

	gracePeriod int64
	statusFn    PodStatusFunc

	startedTerminating bool // a worker observed the termination: SyncPod will not run again
	deleted            bool
	evicted            bool
	finished           bool
	restartRequested   bool // a create arrived while terminating: forget the UID once finished
	observedRuntime    bool

	inFlight     bool
	inFlightKind WorkKind

	dueAt     time.Time
	heapIndex int // position in the requeue heap, -1 if absent
}

func (s *podState) started() bool              { return !s.startedAt.IsZero() }
func (s *podState) terminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podState) terminated() bool           { return !s.terminatedAt.IsZero() }

func (s *podState) state() State {
	switch {
	case s.finished:
		return StateFinished
	case s.terminated():
		return StateTerminated
	case s.terminationRequested():
		return StateTerminating
	default:
		return StateSyncing
	}
}

// configPod returns the latest configured (not runtime-only) pod, or nil.
func (s *podState) configPod() *v1.Pod {
	if s.hasPending && !s.pending.runtime && s.pending.pod != nil {
		return s.pending.pod
	}
	if s.hasActive && !s.active.runtime {
		return s.active.pod
	}
	return nil
}

// Machine is the deterministic core of the pod workers: every pod's state,
// the transitions between states, the full-name gate and the requeue heap. It
// has no goroutines, no clock and no lock; every method takes the current time
// and returns what the caller must do. It is not safe for concurrent use:
// Workers wraps it in a mutex and runs the Syncer calls it hands out.
//
// A driver feeds it updates (Update), runs a worker for every UID that Ready
// returns, and a worker loops: Next hands it work, it calls the Syncer, and
// Complete reports the result; when Next returns false the worker ends. Resync,
// called periodically, replays the last update of pods whose requeue time has
// come. See the package documentation for the loop.
type Machine struct {
	opts MachineOptions
	rand func() float64
	log  *slog.Logger

	pods    map[types.UID]*podState
	workers map[types.UID]struct{} // UIDs with a live worker; only pods with work
	ready   []types.UID            // workers to start, drained by Ready
	queue   dueQueue               // requeue times
	synced  bool                   // SyncKnownPods has run once

	startedByName map[string]types.UID
	waitingByName map[string][]types.UID
}

// NewMachine returns an empty Machine.
func NewMachine(opts MachineOptions) (*Machine, error) {
	if opts.ResyncInterval < 0 {
		return nil, fmt.Errorf("resync interval %s is negative: %w", opts.ResyncInterval, ErrInvalidOptions)
	}
	if opts.BackOffPeriod < 0 {
		return nil, fmt.Errorf("backoff period %s is negative: %w", opts.BackOffPeriod, ErrInvalidOptions)
	}
	if opts.ResyncInterval == 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.BackOffPeriod == 0 {
		opts.BackOffPeriod = DefaultBackOffPeriod
	}
	m := &Machine{
		opts:          opts,
		rand:          opts.Rand,
		log:           opts.Logger,
		pods:          make(map[types.UID]*podState),
		workers:       make(map[types.UID]struct{}),
		startedByName: make(map[string]types.UID),
		waitingByName: make(map[string][]types.UID),
	}
	if m.rand == nil {
		m.rand = rand.Float64
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Update records an update for a pod, coalescing it with any update not yet
// consumed by a worker (the newer one wins; a nil MirrorPod keeps the pending
// one). It decides whether the pod begins terminating (deletion timestamp,
// terminal phase, kill, or a runtime-only pod) and recomputes the grace period
// of a terminating pod, which only shrinks. It reports cancel=true when the
// work in flight for the pod must be cancelled: the pod began terminating, or
// its grace period shrank. Updates for a finished UID, runtime-only kills for
// a terminated pod, and creates for a terminating UID (remembered as a restart
// request) are ignored. An error (wrapping ErrInvalidUpdate) means the update
// was malformed and ignored.
func (m *Machine) Update(now time.Time, opts UpdatePodOptions) (cancel bool, err error) {
	pod := opts.Pod
	runtimeOnly := false
	if pod == nil {
		if opts.RunningPod == nil {
			return false, fmt.Errorf("update pod: neither Pod nor RunningPod is set: %w", ErrInvalidUpdate)
		}
		if opts.UpdateType != SyncPodKill {
			return false, fmt.Errorf("update running pod %s: type %s, but a running pod can only be killed: %w",
				opts.RunningPod.UID, opts.UpdateType, ErrInvalidUpdate)
		}
		pod, runtimeOnly = opts.RunningPod, true
	}
	uid := pod.UID
	s, known := m.pods[uid]
	if !known {
		s = m.newState(now, pod, runtimeOnly)
	}
	fromRuntime := runtimeOnly
	if fromRuntime {
		s.observedRuntime = true
		if cfg := s.configPod(); cfg != nil {
			// A kill found in the runtime for a pod we have configuration for
			// kills that pod.
			pod, runtimeOnly = cfg, false
		}
	}

	if known && s.terminationRequested() && opts.UpdateType == SyncPodCreate {
		// The same UID was created again (a static pod with a fixed UID removed
		// and re-added): let it start once this one is finished and forgotten.
		if !s.restartRequested {
			s.restartRequested = true
			m.debug("pod terminating, restart requested", uid)
		}
		return false, nil
	}
	if s.finished {
		return false, nil
	}

	if !runtimeOnly && pod.DeletionTimestamp != nil {
		s.deleted = true // also when already terminating for another reason
	}
	became := false
	if !s.terminationRequested() {
		switch {
		case fromRuntime:
			s.deleted, became = true, true
		case pod.DeletionTimestamp != nil:
			s.deleted, became = true, true
		case podspec.IsTerminal(pod.Status.Phase):
			became = true
		case opts.UpdateType == SyncPodKill:
			became = true
		}
		if became {
			s.terminatingAt = now
			m.debug("pod termination requested", uid)
		}
	}

	shortened := false
	switch {
	case s.terminated():
		if fromRuntime {
			// A stale runtime listing of a pod already stopped: its worker
			// finishes it; a later housekeeping pass handles what remains.
			return false, nil
		}
	case s.terminationRequested():
		k := &opts.KillPodOptions
		if k.Evict {
			s.evicted = true
		}
		if k.PodStatusFunc != nil {
			s.statusFn = k.PodStatusFunc
		}
		s.gracePeriod, shortened = effectiveGracePeriod(s.gracePeriod, pod, k.PodTerminationGracePeriodSecondsOverride)
	}

	mirror := opts.MirrorPod
	if mirror == nil && s.hasPending {
		mirror = s.pending.mirrorPod
	}
	s.pending = update{updateType: opts.UpdateType, pod: pod, mirrorPod: mirror, runtime: runtimeOnly, startTime: opts.StartTime}
	s.hasPending = true
	m.wake(s)
	return (became || shortened) && s.inFlight, nil
}

func (m *Machine) newState(now time.Time, pod *v1.Pod, runtimeOnly bool) *podState {
	s := &podState{uid: pod.UID, syncedAt: now, heapIndex: -1}
	if !runtimeOnly {
		s.static = isStaticPod(pod)
		if s.static || m.opts.SerializeByFullName {
			s.gated = true
			s.fullName = podFullName(pod)
			m.waitingByName[s.fullName] = append(m.waitingByName[s.fullName], s.uid)
		}
	}
	m.pods[s.uid] = s
	return s
}

// wake makes sure a worker runs for s: if none is live, the UID is added to
// the list Ready returns.
func (m *Machine) wake(s *podState) {
	if _, ok := m.workers[s.uid]; ok {
		return
	}
	m.workers[s.uid] = struct{}{}
	m.ready = append(m.ready, s.uid)
}

// Ready returns the UIDs that have work and no live worker, and forgets them:
// the caller must start one worker for each, which calls Next until it returns
// false (or Release if it gives up). The caller owns the slice. Any method that
// gives a pod work may add to it: Update, Next, Complete, Resync,
// SyncKnownPods.
func (m *Machine) Ready() []types.UID {
	r := m.ready
	m.ready = nil
	return r
}

// Next hands the worker of uid its next unit of work, consuming the pending
// update, and marks it in flight. ok is false when there is no work: the worker
// must end (the Machine no longer counts it as live). A pod that has not started
// and may not start yet (the full-name gate) keeps its update and is retried
// when the name is released or after a backoff; a gated pod whose termination
// was requested before it started is finished without any Syncer call. Next
// must not be called while the pod's work is in flight; it then returns false
// and changes nothing.
func (m *Machine) Next(now time.Time, uid types.UID) (w Work, ok bool) {
	s := m.pods[uid]
	if s != nil && s.inFlight {
		return Work{}, false
	}
	if s == nil || !s.hasPending {
		delete(m.workers, uid)
		return Work{}, false
	}
	u := s.pending
	s.pending, s.hasPending = update{}, false

	if !s.started() && !u.runtime {
		if s.gated {
			may, ever := m.mayStart(s)
			if !ever {
				m.finishUnstarted(now, s)
				delete(m.workers, uid)
				return Work{}, false
			}
			if !may {
				s.pending, s.hasPending = u, true
				m.requeue(s, now.Add(m.jitter(m.opts.BackOffPeriod)))
				delete(m.workers, uid)
				m.debug("pod waits for another pod with its full name", uid)
				return Work{}, false
			}
		}
		s.startedAt = now
	}

	// Remember what this worker acts on: the pod, the last mirror pod.
	if !s.hasActive || !u.runtime {
		s.active.pod, s.active.runtime = u.pod, u.runtime
	}
	if u.mirrorPod != nil {
		s.active.mirrorPod = u.mirrorPod
	}
	s.active.updateType, s.active.startTime = u.updateType, u.startTime
	s.hasActive = true

	w = Work{
		UID:        uid,
		UpdateType: s.active.updateType,
		StartTime:  s.active.startTime,
		Pod:        s.active.pod,
		MirrorPod:  s.active.mirrorPod,
		NewerThan:  s.lastDone,
	}
	switch {
	case s.terminated():
		w.Kind = WorkTerminated
	case s.terminationRequested() && s.active.runtime:
		w.Kind = WorkTerminatingRuntime
		s.startedTerminating = true
	case s.terminationRequested():
		w.Kind = WorkTerminating
		s.startedTerminating = true
		if s.gracePeriod == 0 {
			s.gracePeriod, _ = effectiveGracePeriod(0, s.active.pod, nil)
		}
		w.GracePeriodSeconds = s.gracePeriod
		w.PodStatusFunc = s.statusFn
	default:
		w.Kind = WorkSync
	}
	s.inFlight, s.inFlightKind = true, w.Kind
	// Nothing is due while work is in flight: Complete schedules the next.
	m.queue.remove(s)
	return w, true
}

// finishUnstarted finishes a pod that never started: no container of it ran.
func (m *Machine) finishUnstarted(now time.Time, s *podState) {
	if s.terminatingAt.IsZero() {
		s.terminatingAt = now
	}
	s.terminatedAt = now
	s.finished = true
	s.startedTerminating = true
	s.hasPending = false
	m.queue.remove(s)
	m.releaseName(s)
	m.debug("pod finished before it started", s.uid)
}

// Complete reports the result of the work in flight for uid and moves the pod
// on: a successful SyncPod is requeued after the resync interval (or, if it
// reported a terminal pod, terminating starts at once); a successful
// SyncTerminatingPod makes the pod terminated and SyncTerminatedPod runs at
// once; a successful SyncTerminatedPod finishes it; a successful
// SyncTerminatingRuntimePod forgets the UID. A failed work is requeued with
// backoff (RetryAfter sets the delay; an error with a BackoffExpiration is
// retried when that back-off ends, at most ResyncInterval later). The worker then calls Next again. It
// returns an error wrapping ErrNoWorkInFlight if no work was in flight.
func (m *Machine) Complete(now time.Time, uid types.UID, r Result) error {
	s := m.pods[uid]
	if s == nil || !s.inFlight {
		return fmt.Errorf("complete work for pod %s: %w", uid, ErrNoWorkInFlight)
	}
	s.inFlight = false
	s.lastDone = now
	if r.Err != nil {
		d := m.opts.BackOffPeriod
		if ra := (*RetryAfterError)(nil); errors.As(r.Err, &ra) && ra.Delay >= 0 {
			d = ra.Delay
		} else if until, ok := MinBackoffExpiration(r.Err); ok {
			// Retry when the back-off ends, within [0, resync interval].
			d = min(max(until.Sub(now), 0), m.opts.ResyncInterval)
		}
		m.requeue(s, now.Add(m.jitter(d)))
		return nil
	}
	switch s.inFlightKind {
	case WorkSync:
		if !r.Terminal {
			m.requeue(s, now.Add(m.jitter(m.opts.ResyncInterval)))
			return nil
		}
		if !s.terminationRequested() {
			s.terminatingAt = now
			s.gracePeriod, _ = effectiveGracePeriod(s.gracePeriod, s.active.pod, nil)
			m.debug("pod reached a terminal phase", uid)
		}
		s.startedTerminating = true
		m.queue.remove(s)
		m.replay(s, s.active.updateType, s.active.startTime)
	case WorkTerminating:
		s.terminatedAt = now
		s.statusFn = nil
		m.queue.remove(s)
		m.replay(s, s.active.updateType, s.active.startTime)
		m.debug("pod terminated", uid)
	case WorkTerminatingRuntime:
		if s.terminatedAt.IsZero() {
			s.terminatedAt = now
		}
		s.finished = true
		s.hasPending = false
		m.queue.remove(s)
		m.releaseName(s)
		delete(m.pods, uid)
		m.debug("runtime pod terminated and forgotten", uid)
	case WorkTerminated:
		s.finished = true
		s.hasPending = false
		m.queue.remove(s)
		m.releaseName(s)
		m.debug("pod finished", uid)
	}
	return nil
}

// replay makes the last consumed update pending again, of type t and
// measured from start, unless an update is already pending, and wakes a
// worker.
func (m *Machine) replay(s *podState, t UpdateType, start time.Time) {
	if !s.hasPending {
		if !s.hasActive {
			return
		}
		s.pending = s.active
		s.pending.updateType, s.pending.startTime = t, start
		s.hasPending = true
	}
	m.wake(s)
}

// Release tells the Machine that the worker of uid ended without waiting for
// Next to return false (the driver is shutting down). Work not yet consumed
// stays pending; the next Update or Resync for the pod asks for a worker again.
// It must not be called while work is in flight for uid.
func (m *Machine) Release(uid types.UID) {
	delete(m.workers, uid)
}

// Resync replays the last update, as SyncPodSync, of every pod whose requeue
// time is not after now, and returns their UIDs. Pods are requeued after each
// sync (resync interval or backoff), so this drives periodic resyncs and
// retries, including for pods no longer in any configuration (a deleted pod
// whose SyncTerminatedPod failed is retried until it succeeds). Call it
// periodically (Workers calls it every second); it costs O(due · log pods).
func (m *Machine) Resync(now time.Time) []types.UID {
	var due []types.UID
	for len(m.queue) > 0 && !m.queue[0].dueAt.After(now) {
		s := heap.Pop(&m.queue).(*podState)
		due = append(due, s.uid)
		if s.finished {
			continue
		}
		if s.hasPending {
			m.wake(s)
			continue
		}
		m.replay(s, SyncPodSync, now)
	}
	return due
}

// requeue (re)schedules s at t.
func (m *Machine) requeue(s *podState, t time.Time) {
	s.dueAt = t
	if s.heapIndex >= 0 {
		heap.Fix(&m.queue, s.heapIndex)
		return
	}
	heap.Push(&m.queue, s)
}

// jitter returns d plus up to 50% of d.
func (m *Machine) jitter(d time.Duration) time.Duration {
	return d + time.Duration(m.rand()*jitterFactor*float64(d))
}

// SyncKnownPods reconciles the workers with the desired set of pods, as
// housekeeping does every few seconds. After its first call, predicates answer
// for unknown UIDs as "not running" (see the package documentation). For each
// known UID that is not desired (an orphan), or that was re-created while
// terminating:
//   - a finished pod is forgotten, so that a new pod with that UID may start;
//   - an orphan that never started (and was never seen in the runtime) is
//     forgotten;
//   - any other orphan is driven to termination by the workers themselves:
//     termination is requested if it was not (the grace period comes from the
//     last configuration), and its last update is replayed, so that a deleted
//     pod never waits for an update that will not come.
//
// It returns the pods still known, with their state. The caller re-sends,
// as SyncPodCreate, every desired pod missing from the result, and kills
// (with a RunningPod update) runtime pods whose UID is missing.
func (m *Machine) SyncKnownPods(now time.Time, desired []*v1.Pod) map[types.UID]WorkerSync {
	m.synced = true
	want := make(map[types.UID]struct{}, len(desired))
	for _, p := range desired {
		want[p.UID] = struct{}{}
	}
	known := make(map[types.UID]WorkerSync, len(m.pods))
	for uid, s := range m.pods {
		_, desiredPod := want[uid]
		orphan := !desiredPod
		if (s.restartRequested || orphan) && m.forget(now, s, orphan) {
			continue
		}
		known[uid] = WorkerSync{
			State:     s.state(),
			Orphan:    orphan,
			HasConfig: s.configPod() != nil,
			Static:    s.static,
		}
	}
	return known
}

// forget removes s if it is finished, or an orphan that never ran; otherwise,
// for an orphan, it makes sure the workers drive it to termination. It reports
// whether s was removed.
func (m *Machine) forget(now time.Time, s *podState, orphan bool) bool {
	if !s.finished {
		if !orphan {
			return false
		}
		s.deleted = true
		switch {
		case !s.started() && !s.observedRuntime:
			// Never ran: nothing to stop. Its worker, if any, finds no state
			// and ends.
		case !s.terminationRequested():
			s.terminatingAt = now
			s.gracePeriod, _ = effectiveGracePeriod(0, s.configPod(), nil)
			m.replay(s, SyncPodKill, time.Time{})
			m.debug("orphaned pod: termination requested", s.uid)
			return false
		default:
			// Already terminating or terminated: a retry is in flight,
			// pending or scheduled unless something went wrong; make sure.
			if !s.inFlight && !s.hasPending && s.heapIndex < 0 {
				m.replay(s, SyncPodKill, time.Time{})
			}
			return false
		}
	}
	delete(m.pods, s.uid)
	m.queue.remove(s)
	m.releaseName(s)
	m.debug("pod forgotten", s.uid)
	return true
}

// Superseded reports whether the work in flight for uid should be cancelled
// because the pod began terminating while SyncPod ran (for example when
// SyncKnownPods found it orphaned). Update reports the same through its
// cancel result; a driver checks Superseded for its work in flight after
// SyncKnownPods.
func (m *Machine) Superseded(uid types.UID) bool {
	s := m.pods[uid]
	return s != nil && s.inFlight && s.inFlightKind == WorkSync && s.terminationRequested()
}

// Len returns the number of UIDs the Machine knows.
func (m *Machine) Len() int { return len(m.pods) }

// State returns the lifecycle state of uid, and false if the UID is unknown.
func (m *Machine) State(uid types.UID) (State, bool) {
	s := m.pods[uid]
	if s == nil {
		return 0, false
	}
	return s.state(), true
}

func (m *Machine) debug(msg string, uid types.UID) {
	if m.log.Enabled(context.Background(), slog.LevelDebug) {
		m.log.Debug(msg, "podUID", string(uid))
	}
}

// dueQueue is a min-heap of pods by requeue time.
type dueQueue []*podState

// Len, Less, Swap, Push and Pop implement heap.Interface.
func (q dueQueue) Len() int { return len(q) }

// Less orders pods by requeue time.
func (q dueQueue) Less(i, j int) bool { return q[i].dueAt.Before(q[j].dueAt) }

// Swap swaps two pods and their heap indexes.
func (q dueQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIndex = i
	q[j].heapIndex = j
}

// Push appends a pod.
func (q *dueQueue) Push(x any) {
	s := x.(*podState)
	s.heapIndex = len(*q)
	*q = append(*q, s)
}

// Pop removes the last pod.
func (q *dueQueue) Pop() any {
	old := *q
	n := len(old) - 1
	s := old[n]
	old[n] = nil
	*q = old[:n]
	s.heapIndex = -1
	return s
}

// remove takes s out of the heap if it is there.
func (q *dueQueue) remove(s *podState) {
	if s.heapIndex >= 0 {
		heap.Remove(q, s.heapIndex)
	}
}
