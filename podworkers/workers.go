package podworkers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultResyncTick is how often Workers.Run looks for pods due for a resync
// or a retry: upstream's sync loop tick.
const DefaultResyncTick = time.Second

// Options configure Workers. Syncer and StatusWaiter are required; the zero
// value of every other field is its documented default.
type Options struct {
	// Syncer does the work. Required.
	Syncer Syncer
	// StatusWaiter blocks each sync until the pod's runtime status is newer
	// than the previous sync (the pleg cache; see StatusWaiter). Required; a
	// node agent without a status cache passes a StatusWaiterFunc that
	// returns nil.
	StatusWaiter StatusWaiter
	// Clock is the time source. Nil means the real clock.
	Clock clock.WithTicker
	// Logger receives logs. Nil means discard.
	Logger *slog.Logger
	// Metrics receives a measurement per Syncer call. Nil means none.
	Metrics Metrics
	// ResyncTick is how often Run replays the pods whose resync or retry is
	// due. Zero means DefaultResyncTick (1s).
	ResyncTick time.Duration
	// Machine configures the state machine: resync interval, backoff,
	// jitter, full-name gate.
	Machine MachineOptions
	// Terminated, when set, is called once a pod's termination succeeded
	// (SyncTerminatingPod or SyncTerminatingRuntimePod returned nil), after
	// the workers recorded it: from then on CouldHaveRunningContainers
	// answers false for the pod. A status manager that held a terminal
	// phase back while it answered true pushes again from here. It is
	// called from the pod's worker goroutine, outside the workers' lock,
	// and must not block.
	Terminated func(uid types.UID)
	// StartGate, with Starting, bounds the syncs of starting pods: each
	// SyncPod of a pod Starting says is starting (with its admission order)
	// holds one of the gate's slots, taken after the status wait and given
	// back when SyncPod returns; the Syncer pauses it through
	// TicketFromContext while the pod waits for something other than the
	// node. Nil means no bound. Set both or neither.
	StartGate *StartGate
	// Starting says whether a pod has yet to start (upstream's "not yet
	// seen Running") and its admission order, oldest first. It is called
	// from the pod's worker goroutine and must not block.
	Starting func(uid types.UID) (seq uint64, starting bool)
}

type phase uint8

const (
	phaseNew phase = iota
	phaseRunning
	phaseStopped
)

// Workers runs the pod workers: the Machine under a mutex, one goroutine per
// pod that has work (and none for an idle pod), the Syncer calls, the periodic
// resync. All methods are safe for concurrent use. Nothing runs until Run is
// called; updates sent before are kept and start when Run does.
type Workers struct {
	syncer  Syncer
	waiter  StatusWaiter
	clock   clock.WithTicker
	log     *slog.Logger
	metrics Metrics
	tick    time.Duration
	onTerm  func(uid types.UID) // Options.Terminated
	gate    *StartGate
	start   func(uid types.UID) (uint64, bool) // Options.Starting

	mu       sync.Mutex
	m        *Machine
	phase    phase
	ctx      context.Context // Run's; parent of every sync's ctx
	done     chan struct{}   // closed when Run stops
	deferred []types.UID     // workers asked for before Run
	inflight map[types.UID]context.CancelFunc
	waiters  map[types.UID][]chan struct{} // KillPod callers
	live     int                           // worker goroutines running
	idle     chan struct{}                 // closed when live drops to 0; nil if nobody waits
	wg       sync.WaitGroup
}

// New returns Workers configured by opts. It starts no goroutine. It returns
// an error wrapping ErrMissingDependency if Syncer or StatusWaiter is nil, and
// one wrapping ErrInvalidOptions for a negative duration.
func New(opts Options) (*Workers, error) {
	if opts.Syncer == nil {
		return nil, fmt.Errorf("new pod workers: Syncer is nil: %w", ErrMissingDependency)
	}
	if opts.StatusWaiter == nil {
		return nil, fmt.Errorf("new pod workers: StatusWaiter is nil: %w", ErrMissingDependency)
	}
	if (opts.StartGate == nil) != (opts.Starting == nil) {
		return nil, fmt.Errorf("new pod workers: StartGate and Starting go together: %w", ErrInvalidOptions)
	}
	if opts.ResyncTick < 0 {
		return nil, fmt.Errorf("new pod workers: resync tick %s is negative: %w", opts.ResyncTick, ErrInvalidOptions)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ResyncTick == 0 {
		opts.ResyncTick = DefaultResyncTick
	}
	if opts.Machine.Logger == nil {
		opts.Machine.Logger = opts.Logger
	}
	m, err := NewMachine(opts.Machine)
	if err != nil {
		return nil, fmt.Errorf("new pod workers: %w", err)
	}
	return &Workers{
		syncer:   opts.Syncer,
		waiter:   opts.StatusWaiter,
		clock:    opts.Clock,
		log:      opts.Logger,
		metrics:  opts.Metrics,
		tick:     opts.ResyncTick,
		onTerm:   opts.Terminated,
		gate:     opts.StartGate,
		start:    opts.Starting,
		m:        m,
		done:     make(chan struct{}),
		inflight: make(map[types.UID]context.CancelFunc),
		waiters:  make(map[types.UID][]chan struct{}),
	}, nil
}

// Run starts the workers for the updates received so far and replays due
// resyncs and retries every ResyncTick, until ctx ends. Then it cancels the
// syncs in flight, waits for every worker goroutine to end, and returns nil.
// Run may be called once; later calls return an error.
func (w *Workers) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.phase != phaseNew {
		w.mu.Unlock()
		return errors.New("run pod workers: Run was already called")
	}
	// The ticker exists before any work runs, so a test that saw a sync
	// may step a fake clock.
	ticker := w.clock.NewTicker(w.tick)
	defer ticker.Stop()
	w.phase, w.ctx = phaseRunning, ctx
	for _, uid := range w.deferred {
		w.spawnLocked(uid)
	}
	w.deferred = nil
	w.mu.Unlock()

	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			w.phase = phaseStopped
			close(w.done)
			w.mu.Unlock()
			w.wg.Wait()
			return nil
		case <-ticker.C():
			w.mu.Lock()
			w.m.Resync(w.clock.Now())
			w.startReadyLocked()
			w.mu.Unlock()
		}
	}
}

// UpdatePod delivers an update for a pod (see UpdatePodOptions and
// Machine.Update): the pod's worker starts if it is idle, the update replaces
// one not yet consumed, and a sync in flight is cancelled if the pod began
// terminating or its grace period shrank. It never blocks on a sync. A
// malformed update is logged and dropped.
func (w *Workers) UpdatePod(opts UpdatePodOptions) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cancel, err := w.m.Update(w.clock.Now(), opts)
	if err != nil {
		w.log.Error("dropping pod update", "err", err)
		return
	}
	if cancel {
		if c := w.inflight[opts.uid()]; c != nil {
			c()
		}
	}
	w.startReadyLocked()
}

// KillPod requests termination of pod, as an update of type SyncPodKill with
// opts, and waits until SyncTerminatingPod has succeeded for it (no container
// runs), the pod is forgotten, or ctx ends. It returns at once if the pod is
// already terminated. It is the synchronous kill that eviction and preemption
// use; bound it with a ctx deadline (upstream waits for the grace period plus
// half, at least 10s).
func (w *Workers) KillPod(ctx context.Context, pod *v1.Pod, opts KillPodOptions) error {
	if pod == nil {
		return fmt.Errorf("kill pod: pod is nil: %w", ErrInvalidUpdate)
	}
	w.mu.Lock()
	if w.phase == phaseStopped {
		w.mu.Unlock()
		return fmt.Errorf("kill pod %s: %w", pod.UID, ErrStopped)
	}
	cancel, err := w.m.Update(w.clock.Now(), UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod, KillPodOptions: opts})
	if err != nil {
		w.mu.Unlock()
		return fmt.Errorf("kill pod %s: %w", pod.UID, err)
	}
	if cancel {
		if c := w.inflight[pod.UID]; c != nil {
			c()
		}
	}
	w.startReadyLocked()
	if w.killDoneLocked(pod.UID) {
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiters[pod.UID] = append(w.waiters[pod.UID], ch)
	w.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-w.done:
		return fmt.Errorf("kill pod %s: %w", pod.UID, ErrStopped)
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-ch:
			return nil
		default:
		}
		chs := w.waiters[pod.UID]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(w.waiters, pod.UID)
		} else {
			w.waiters[pod.UID] = chs
		}
		return fmt.Errorf("kill pod %s: %w", pod.UID, ctx.Err())
	}
}

// SyncKnownPods reconciles the workers with the desired pods (see
// Machine.SyncKnownPods): it forgets finished pods that left the desired set,
// drives orphans to termination, cancels a SyncPod in flight for a pod it
// orphaned, and returns the pods still known.
func (w *Workers) SyncKnownPods(desired []*v1.Pod) map[types.UID]WorkerSync {
	w.mu.Lock()
	defer w.mu.Unlock()
	known := w.m.SyncKnownPods(w.clock.Now(), desired)
	for uid, c := range w.inflight {
		if w.m.Superseded(uid) {
			c()
		}
	}
	w.startReadyLocked()
	w.notifyWaitersLocked()
	return known
}

// State returns the lifecycle state of uid, and false if the UID is unknown.
func (w *Workers) State(uid types.UID) (State, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.State(uid)
}

// IsPodKnownTerminated is Machine.IsPodKnownTerminated under the lock.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.IsPodKnownTerminated(uid)
}

// IsPodKnownToWorker is Machine.IsPodKnownToWorker under the lock.
func (w *Workers) IsPodKnownToWorker(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.IsPodKnownToWorker(uid)
}

// CouldHaveRunningContainers is Machine.CouldHaveRunningContainers under the
// lock.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.CouldHaveRunningContainers(uid)
}

// ShouldPodBeFinished is Machine.ShouldPodBeFinished under the lock.
func (w *Workers) ShouldPodBeFinished(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.ShouldPodBeFinished(uid)
}

// IsPodTerminationRequested is Machine.IsPodTerminationRequested under the
// lock.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.IsPodTerminationRequested(uid)
}

// ShouldPodContainersBeTerminating is
// Machine.ShouldPodContainersBeTerminating under the lock.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.ShouldPodContainersBeTerminating(uid)
}

// ShouldPodRuntimeBeRemoved is Machine.ShouldPodRuntimeBeRemoved under the
// lock.
func (w *Workers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.ShouldPodRuntimeBeRemoved(uid)
}

// ShouldPodContentBeRemoved is Machine.ShouldPodContentBeRemoved under the
// lock.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.ShouldPodContentBeRemoved(uid)
}

// IsPodForMirrorPodTerminatingByFullName is
// Machine.IsPodForMirrorPodTerminatingByFullName under the lock.
func (w *Workers) IsPodForMirrorPodTerminatingByFullName(fullName string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m.IsPodForMirrorPodTerminatingByFullName(fullName)
}

// startReadyLocked starts a worker for each UID the Machine asks for.
func (w *Workers) startReadyLocked() {
	for _, uid := range w.m.Ready() {
		switch w.phase {
		case phaseNew:
			w.deferred = append(w.deferred, uid)
		case phaseRunning:
			w.spawnLocked(uid)
		default:
			w.m.Release(uid)
		}
	}
}

func (w *Workers) spawnLocked(uid types.UID) {
	w.wg.Add(1)
	w.live++
	go w.work(uid)
}

// exitLocked accounts for a worker goroutine that is about to end.
func (w *Workers) exitLocked() {
	w.live--
	if w.live == 0 && w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
}

// WaitIdle blocks until no worker goroutine runs (every pod's work so far is
// done and nothing is pending), or ctx ends, or Run stops. Resyncs and retries
// scheduled for later do not count. Tests use it to reach a quiet point
// without sleeping; before Run, updates wait for Run and WaitIdle with them.
func (w *Workers) WaitIdle(ctx context.Context) error {
	w.mu.Lock()
	if w.live == 0 && len(w.deferred) == 0 {
		w.mu.Unlock()
		return nil
	}
	if w.idle == nil {
		w.idle = make(chan struct{})
	}
	ch := w.idle
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-w.done:
		return fmt.Errorf("wait for idle pod workers: %w", ErrStopped)
	case <-ctx.Done():
		return fmt.Errorf("wait for idle pod workers: %w", ctx.Err())
	}
}

// work is the goroutine of one pod: it runs the pod's work until the Machine
// has none left, then ends.
func (w *Workers) work(uid types.UID) {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if w.phase != phaseRunning || w.ctx.Err() != nil {
			w.m.Release(uid)
			w.exitLocked()
			w.mu.Unlock()
			return
		}
		work, ok := w.m.Next(w.clock.Now(), uid)
		if !ok {
			w.startReadyLocked()
			w.notifyWaitersLocked()
			w.exitLocked()
			w.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(w.ctx)
		w.inflight[uid] = cancel
		w.mu.Unlock()

		start := w.clock.Now()
		res := w.do(ctx, work)
		cancel()
		if w.metrics != nil {
			end := w.clock.Now()
			o := WorkObservation{Kind: work.Kind, UpdateType: work.UpdateType, Took: end.Sub(start), Err: res.Err}
			if !work.StartTime.IsZero() {
				o.SinceStart, o.Started = end.Sub(work.StartTime), true
			}
			w.metrics.ObserveWork(o)
		}
		if res.Err != nil {
			level := slog.LevelError
			if errors.Is(res.Err, context.Canceled) {
				level = slog.LevelDebug
			}
			w.log.Log(context.Background(), level, "pod work failed", "podUID", string(uid), "work", work.Kind.String(), "err", res.Err)
		}

		w.mu.Lock()
		delete(w.inflight, uid)
		if err := w.m.Complete(w.clock.Now(), uid, res); err != nil {
			w.log.Error("pod worker", "err", err)
		}
		w.startReadyLocked()
		w.notifyWaitersLocked()
		w.mu.Unlock()
		terminating := work.Kind == WorkTerminating || work.Kind == WorkTerminatingRuntime
		if terminating && res.Err == nil && w.onTerm != nil {
			w.onTerm(uid)
		}
	}
}

// do waits for a fresh enough runtime status and calls the Syncer.
func (w *Workers) do(ctx context.Context, work Work) Result {
	if work.Kind != WorkTerminatingRuntime {
		if err := w.waiter.WaitNewerThan(ctx, work.UID, work.NewerThan); err != nil {
			return Result{Err: fmt.Errorf("%s %s: wait for runtime status: %w", work.Kind, work.UID, err)}
		}
	}
	var (
		terminal bool
		err      error
	)
	switch work.Kind {
	case WorkSync:
		if w.gate != nil {
			if seq, starting := w.start(work.UID); starting {
				t, gerr := w.gate.Enter(ctx, seq)
				if gerr != nil {
					return Result{Err: fmt.Errorf("%s %s: %w", work.Kind, work.UID, gerr)}
				}
				defer t.Leave()
				ctx = contextWithTicket(ctx, t)
			}
		}
		terminal, err = w.syncer.SyncPod(ctx, work.UpdateType, work.Pod, work.MirrorPod)
	case WorkTerminating:
		err = w.syncer.SyncTerminatingPod(ctx, work.Pod, work.GracePeriodSeconds, work.PodStatusFunc)
	case WorkTerminatingRuntime:
		err = w.syncer.SyncTerminatingRuntimePod(ctx, work.Pod)
	case WorkTerminated:
		err = w.syncer.SyncTerminatedPod(ctx, work.Pod)
	}
	if err != nil {
		return Result{Err: fmt.Errorf("%s %s: %w", work.Kind, work.UID, err)}
	}
	return Result{Terminal: terminal}
}

// killDoneLocked reports whether a KillPod of uid is complete.
func (w *Workers) killDoneLocked(uid types.UID) bool {
	st, ok := w.m.State(uid)
	return !ok || st == StateTerminated || st == StateFinished
}

// notifyWaitersLocked releases the KillPod callers whose pod is terminated.
func (w *Workers) notifyWaitersLocked() {
	for uid, chs := range w.waiters {
		if !w.killDoneLocked(uid) {
			continue
		}
		for _, ch := range chs {
			close(ch)
		}
		delete(w.waiters, uid)
	}
}
