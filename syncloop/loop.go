package syncloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/prober"
)

// SyncHandler is what the loop drives: upstream kubelet's SyncHandler. The
// loop calls one method at a time, from its own goroutine, so a handler
// needs no locking against the loop; a handler that blocks stalls the loop
// (and makes Healthy fail), so long work belongs to pod workers.
type SyncHandler interface {
	// HandlePodAdditions is called with pods new to the configuration.
	HandlePodAdditions(pods []*v1.Pod)
	// HandlePodUpdates is called with pods whose spec or metadata changed,
	// and with pods gracefully deleted (deletionTimestamp set).
	HandlePodUpdates(pods []*v1.Pod)
	// HandlePodRemoves is called with pods gone from their source.
	HandlePodRemoves(pods []*v1.Pod)
	// HandlePodReconcile is called with pods of which only the status
	// changed in their source.
	HandlePodReconcile(pods []*v1.Pod)
	// HandlePodSyncs is called with pods to sync again: the runtime did
	// something to them, a probe result changed, or their requeue time came.
	HandlePodSyncs(pods []*v1.Pod)
	// HandlePodCleanups is housekeeping: forget finished pods, kill
	// orphans, collect garbage. It runs every HousekeepingPeriod once all
	// sources are ready; its error is logged and the loop goes on.
	HandlePodCleanups(ctx context.Context) error
}

// PodGetter finds a desired pod by UID; PodSet satisfies it.
type PodGetter interface {
	GetPodByUID(uid types.UID) (*v1.Pod, bool)
}

// Upstream's timings.
const (
	// DefaultSyncPeriod is how often the loop asks PodsToSync for pods whose
	// requeue time came (upstream's one-second sync ticker).
	DefaultSyncPeriod = time.Second
	// DefaultHousekeepingPeriod is how often HandlePodCleanups runs
	// (housekeepingPeriod).
	DefaultHousekeepingPeriod = 2 * time.Second
	// DefaultUnhealthyAfter is how long one iteration may take before
	// Healthy fails (upstream's syncLoopHealthCheck minimum).
	DefaultUnhealthyAfter = 5 * time.Minute
	// RuntimeBackoffInitial is the first pause while the runtime reports
	// errors; it doubles up to RuntimeBackoffMax and resets once the runtime
	// is healthy again.
	RuntimeBackoffInitial = 100 * time.Millisecond
	// RuntimeBackoffMax caps the pause while the runtime reports errors.
	RuntimeBackoffMax = 5 * time.Second
	// housekeepingWarning is how long housekeeping may take before the loop
	// warns about it, as upstream does.
	housekeepingWarning = time.Second
)

// ErrInvalidOptions is wrapped by New's errors when a required option is
// missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// Options configure a Loop. Handler, Updates and Pods are required; every
// other zero value means the documented default.
type Options struct {
	// Handler receives the work. Required.
	Handler SyncHandler
	// Updates is the merged configuration (source.Config.Updates). Run
	// ends, with a nil error, when it is closed. Required.
	Updates <-chan PodUpdate
	// PLEGEvents are the runtime's pod lifecycle events: every event but
	// ContainerRemoved syncs its pod. Nil means none.
	PLEGEvents <-chan pleg.Event
	// Liveness and Startup results sync the pod when a container fails its
	// probe (a startup success syncs it too, so that liveness and readiness
	// probing can begin and the status shows it started). Readiness changes
	// sync the pod either way. The prober has recorded the result by the
	// time it arrives here, so the sync's status reads it (and ProbeStatus,
	// below, writes it at once). Nil means none.
	Liveness, Readiness, Startup <-chan prober.Update
	// ProbeStatus, when set, gets every readiness and startup result before
	// the pod is synced, to write it into the pod's status at once
	// (status.Manager implements it), as upstream's loop does: a pod whose
	// worker is busy (terminating through its grace period) still shows a
	// container turning unready. Nil means only the sync updates the
	// status.
	ProbeStatus ProbeStatusWriter
	// Pods resolves the UIDs of events and probe results to desired pods;
	// results for pods it does not know are dropped. Required.
	Pods PodGetter
	// PodsToSync returns the pods whose requeue time came; it is called
	// every SyncPeriod. Nil means none: podworkers replays its own requeues.
	PodsToSync func(now time.Time) []*v1.Pod
	// RuntimeHealthy reports whether the runtime can take work. While it
	// returns an error the loop handles nothing and checks again after a
	// pause that starts at RuntimeBackoffInitial and doubles up to
	// RuntimeBackoffMax, as upstream's loop does. Nil means always healthy.
	RuntimeHealthy func() error
	// SourcesReady reports whether every pod source has sent its first
	// complete list; housekeeping is skipped until it does, so that pods not
	// yet read are not taken for orphans. Nil means always ready.
	SourcesReady func() bool
	// SyncPeriod is the PodsToSync period (default DefaultSyncPeriod).
	SyncPeriod time.Duration
	// HousekeepingPeriod is the HandlePodCleanups period (default
	// DefaultHousekeepingPeriod).
	HousekeepingPeriod time.Duration
	// UnhealthyAfter is how long an iteration may run before Healthy fails
	// (default DefaultUnhealthyAfter).
	UnhealthyAfter time.Duration
	// Clock is the time source (default the real clock).
	Clock clock.WithTicker
	// Logger receives the loop's logs (default: discarded).
	Logger *slog.Logger
}

// ProbeStatusWriter writes probe results into the statuses of pods
// (status.Manager); the container ID is the bare CRI ID.
type ProbeStatusWriter interface {
	SetContainerReadiness(uid types.UID, containerID string, ready bool)
	SetContainerStartup(uid types.UID, containerID string, started bool)
}

// Loop is the sync loop: it turns configuration changes, runtime events,
// probe results and timers into calls on a SyncHandler, one at a time.
type Loop struct {
	opts Options
	log  *slog.Logger

	runOnce sync.Once
	// iteration is when the current iteration began (unix nanoseconds of
	// the loop's clock), 0 when the loop is idle or has not started.
	iteration atomic.Int64
	started   atomic.Bool
}

// New returns a Loop; it starts nothing until Run.
func New(opts Options) (*Loop, error) {
	switch {
	case opts.Handler == nil:
		return nil, fmt.Errorf("syncloop: Handler is required: %w", ErrInvalidOptions)
	case opts.Updates == nil:
		return nil, fmt.Errorf("syncloop: Updates is required: %w", ErrInvalidOptions)
	case opts.Pods == nil:
		return nil, fmt.Errorf("syncloop: Pods is required: %w", ErrInvalidOptions)
	case opts.SyncPeriod < 0, opts.HousekeepingPeriod < 0, opts.UnhealthyAfter < 0:
		return nil, fmt.Errorf("syncloop: periods must not be negative: %w", ErrInvalidOptions)
	}
	if opts.SyncPeriod == 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	if opts.HousekeepingPeriod == 0 {
		opts.HousekeepingPeriod = DefaultHousekeepingPeriod
	}
	if opts.UnhealthyAfter == 0 {
		opts.UnhealthyAfter = DefaultUnhealthyAfter
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Loop{opts: opts, log: log}, nil
}

// Run runs the loop until ctx ends or Updates is closed. It returns nil when
// Updates closes, ctx.Err() when ctx ends, and an error if called twice.
func (l *Loop) Run(ctx context.Context) error {
	first := false
	l.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("syncloop: Run called more than once")
	}
	syncTicker := l.opts.Clock.NewTicker(l.opts.SyncPeriod)
	defer syncTicker.Stop()
	housekeeping := l.opts.Clock.NewTicker(l.opts.HousekeepingPeriod)
	defer housekeeping.Stop()
	l.started.Store(true)
	l.log.Info("Starting sync loop")

	backoff := RuntimeBackoffInitial
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.opts.RuntimeHealthy != nil {
			if err := l.opts.RuntimeHealthy(); err != nil {
				l.log.Error("Skipping pod synchronization", "err", err, "retryIn", backoff)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-l.opts.Clock.After(backoff):
				}
				backoff = min(2*backoff, RuntimeBackoffMax)
				continue
			}
		}
		backoff = RuntimeBackoffInitial
		if !l.iterate(ctx, syncTicker.C(), housekeeping.C()) {
			l.log.Info("Update channel is closed, exiting the sync loop")
			return nil
		}
	}
}

// Healthy returns an error while the loop has not started or when its
// current iteration has run longer than UnhealthyAfter, as upstream's
// syncloop health check does.
func (l *Loop) Healthy() error {
	if !l.started.Load() {
		return errors.New("sync loop has not started")
	}
	began := l.iteration.Load()
	if began == 0 {
		return nil
	}
	if took := l.opts.Clock.Since(time.Unix(0, began)); took > l.opts.UnhealthyAfter {
		return fmt.Errorf("sync loop took longer than expected: iteration running for %s", took.Round(time.Second))
	}
	return nil
}

// iterate waits for one thing to happen and hands it to the handler. It
// returns false when Updates is closed.
func (l *Loop) iterate(ctx context.Context, syncCh, housekeepingCh <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return true // Run notices ctx.
	case u, open := <-l.opts.Updates:
		if !open {
			return false
		}
		l.busy()
		defer l.idle()
		l.dispatch(u)
	case e := <-l.opts.PLEGEvents:
		l.busy()
		defer l.idle()
		l.plegEvent(e)
	case u := <-l.opts.Liveness:
		if u.Result == prober.Failure {
			l.busy()
			defer l.idle()
			l.probeSync(u, "liveness", "unhealthy")
		}
	case u := <-l.opts.Readiness:
		l.busy()
		defer l.idle()
		status := ""
		if u.Result == prober.Success {
			status = "ready"
		}
		if l.opts.ProbeStatus != nil {
			l.opts.ProbeStatus.SetContainerReadiness(u.PodUID, u.ContainerID, u.Result == prober.Success)
		}
		l.probeSync(u, "readiness", status)
	case u := <-l.opts.Startup:
		l.busy()
		defer l.idle()
		status := "unhealthy"
		if u.Result == prober.Success {
			status = "started"
		}
		if l.opts.ProbeStatus != nil {
			l.opts.ProbeStatus.SetContainerStartup(u.PodUID, u.ContainerID, u.Result == prober.Success)
		}
		l.probeSync(u, "startup", status)
	case now := <-syncCh:
		if l.opts.PodsToSync == nil {
			return true
		}
		l.busy()
		defer l.idle()
		if pods := l.opts.PodsToSync(now); len(pods) > 0 {
			l.log.Debug("SyncLoop (SYNC) pods", "pods", len(pods))
			l.opts.Handler.HandlePodSyncs(pods)
		}
	case <-housekeepingCh:
		if l.opts.SourcesReady != nil && !l.opts.SourcesReady() {
			l.log.Debug("SyncLoop (housekeeping, skipped): sources aren't ready yet")
			return true
		}
		l.busy()
		defer l.idle()
		start := l.opts.Clock.Now()
		if err := l.opts.Handler.HandlePodCleanups(ctx); err != nil {
			l.log.Error("Failed cleaning pods", "err", err)
		}
		if took := l.opts.Clock.Since(start); took > housekeepingWarning {
			l.log.Warn("Housekeeping took longer than expected", "expected", housekeepingWarning, "actual", took.Round(time.Millisecond))
		}
	}
	return true
}

// busy marks an iteration as running, for Healthy.
func (l *Loop) busy() { l.iteration.Store(l.opts.Clock.Now().UnixNano()) }

// idle marks the iteration as done.
func (l *Loop) idle() { l.iteration.Store(0) }

// debug reports whether debug logs are wanted, so that hot paths build their
// arguments only then.
func (l *Loop) debug() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

// dispatch hands a configuration change to the handler.
func (l *Loop) dispatch(u PodUpdate) {
	if len(u.Pods) == 0 {
		return
	}
	l.log.Debug("SyncLoop config update", "op", u.Op, "source", u.Source, "pods", len(u.Pods))
	h := l.opts.Handler
	switch u.Op {
	case OpAdd:
		h.HandlePodAdditions(u.Pods)
	case OpUpdate:
		h.HandlePodUpdates(u.Pods)
	case OpRemove:
		h.HandlePodRemoves(u.Pods)
	case OpReconcile:
		h.HandlePodReconcile(u.Pods)
	case OpDelete:
		// A graceful deletion is an update: the pod's deletionTimestamp
		// starts its termination.
		h.HandlePodUpdates(u.Pods)
	case OpSet:
		l.log.Error("Ignoring a SET update: the sync loop needs incremental updates; send sources through source.Config", "source", u.Source)
	default:
		l.log.Error("Ignoring an update with an unknown operation", "op", u.Op, "source", u.Source)
	}
}

// plegEvent syncs the pod of a runtime event.
func (l *Loop) plegEvent(e pleg.Event) {
	if e.Type == pleg.ContainerRemoved {
		return
	}
	pod, ok := l.opts.Pods.GetPodByUID(e.PodUID)
	if !ok {
		// The pod was removed from the configuration; housekeeping deals
		// with what is left of it in the runtime.
		if l.debug() {
			l.log.Debug("SyncLoop (PLEG): pod does not exist, ignore irrelevant event", "podUID", e.PodUID, "event", e.Type)
		}
		return
	}
	if l.debug() {
		l.log.Debug("SyncLoop (PLEG): event for pod", "pod", podspec.FullName(pod), "event", e.Type, "containerID", e.ContainerID)
	}
	l.opts.Handler.HandlePodSyncs([]*v1.Pod{pod})
}

// probeSync syncs the pod of a probe result.
func (l *Loop) probeSync(u prober.Update, probe, status string) {
	pod, ok := l.opts.Pods.GetPodByUID(u.PodUID)
	if !ok {
		l.log.Debug("SyncLoop (probe): ignore irrelevant update", "probe", probe, "status", status, "podUID", u.PodUID)
		return
	}
	if l.debug() {
		l.log.Debug("SyncLoop (probe)", "probe", probe, "status", status, "pod", podspec.FullName(pod))
	}
	l.opts.Handler.HandlePodSyncs([]*v1.Pod{pod})
}
