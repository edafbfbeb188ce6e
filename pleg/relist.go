package pleg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// errRuntimeTimeout is the cause of a runtime call cut short by
// RuntimeTimeout.
var errRuntimeTimeout = errors.New("runtime call timed out")

// relister is the relist machinery both PLEGs share: list, diff against the
// committed records, inspect the pods that changed in parallel, write the
// cache, queue the events, and track health.
type relister struct {
	rt          Runtime
	cache       *Cache
	clock       clock.WithDelayedExecution
	log         *slog.Logger
	metrics     Metrics
	out         *outbox
	parallelism int
	timeout     time.Duration

	mu sync.Mutex // serialises relists; guards the fields below
	// tracker holds, per pod, the sandboxes and containers whose events
	// have been delivered. A pod whose inspection failed is not committed,
	// so the next relist finds the same changes again and retries.
	tracker *tracker
	// reinspect holds the pods whose inspection failed: inspected again on
	// the next relist even when nothing changed any more.
	reinspect map[types.UID]struct{}
	prevStart time.Time

	// Buffers reused from one relist to the next, so that a relist in which
	// every pod changed allocates little beyond the statuses it stores.
	events  []Event     // what the diff found
	targets []target    // the pods to inspect
	ids     []string    // the targets' sandbox and container IDs
	deliver []Event     // the targets' events to deliver, for the queue
	workers []callTimer // one per inspecting goroutine

	hmu      sync.Mutex // guards the health fields
	lastSeen time.Time  // start of the last relist that succeeded
	inflight time.Time  // start of the relist in progress; zero if none
}

func newRelister(rt Runtime, cache *Cache, clk clock.WithDelayedExecution, log *slog.Logger, m Metrics, out *outbox, parallelism int, timeout time.Duration) *relister {
	return &relister{
		rt: rt, cache: cache, clock: clk, log: log, metrics: m, out: out,
		parallelism: parallelism, timeout: timeout,
		tracker:   newTracker(),
		reinspect: make(map[types.UID]struct{}),
	}
}

// withTimeout bounds one runtime call by the configured timeout, measured on
// the injected clock.
func (r *relister) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if r.timeout <= 0 {
		return ctx, func() { cancel(nil) }
	}
	t := r.clock.AfterFunc(r.timeout, func() { cancel(errRuntimeTimeout) })
	return ctx, func() { t.Stop(); cancel(nil) }
}

// target is one pod a relist inspects.
type target struct {
	uid types.UID
	podIDs
	gone bool // the relist saw nothing of the pod
	// events is what the diff found for the pod but ContainerChanged (which
	// only makes the relist inspect the pod, as upstream): what is handed
	// over. It may be empty.
	events []Event
	ok     bool // the inspection succeeded
}

// relist runs one relist. It returns an error when listing failed; failed
// inspections are logged and retried on the next relist.
func (r *relister) relist(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()

	start := r.clock.Now()
	if !r.prevStart.IsZero() {
		r.metrics.RelistInterval(start.Sub(r.prevStart))
	}
	r.prevStart = start
	r.setInflight(start)
	defer func() {
		r.setInflight(time.Time{})
		r.metrics.RelistDuration(r.clock.Since(start))
	}()

	lctx, cancel := r.withTimeout(ctx)
	sandboxes, err := r.rt.ListPodSandbox(lctx, nil)
	var containers []*runtimeapi.Container
	if err == nil {
		containers, err = r.rt.ListContainers(lctx, nil)
	}
	if err != nil {
		err = fmt.Errorf("relist: %w", withCause(lctx, err))
		cancel()
		return err
	}
	cancel()

	r.tracker.observe(sandboxes, containers)
	r.events = r.tracker.diff(r.events[:0])
	r.setTargets()
	if len(r.targets) > 0 {
		r.inspectAll(ctx, r.targets, start)
		for i := range r.targets {
			t := &r.targets[i]
			if t.ok {
				r.tracker.commit(t.uid)
				delete(r.reinspect, t.uid)
			} else {
				r.reinspect[t.uid] = struct{}{}
			}
		}
	}
	// Drop references to IDs and statuses until the next relist.
	clear(r.events)
	clear(r.targets)
	clear(r.ids)
	clear(r.deliver)
	if err := ctx.Err(); err != nil {
		// Inspections were cut short: the cache is not current.
		return fmt.Errorf("relist: %w", err)
	}

	// Every pod is now either inspected as of start, unchanged since its
	// last inspection, or stamped with its inspection error as of start, so
	// the whole cache is current as of start (upstream's rule).
	r.cache.UpdateTime(start)
	r.hmu.Lock()
	r.lastSeen = start
	r.hmu.Unlock()
	r.metrics.LastSeen(start)
	return nil
}

// withCause returns err, mentioning the timeout when the call was cut short
// by RuntimeTimeout.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errRuntimeTimeout) && !errors.Is(err, errRuntimeTimeout) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// setTargets sets r.targets to the pods to inspect: those the diff found
// changes in (in the diff's order) and those whose last inspection failed.
func (r *relister) setTargets() {
	r.targets, r.ids = r.targets[:0], r.ids[:0]
	// Events handed to a consumer function are its own: a new array per
	// relist, shared by the relist's pods. The queue copies them, so its
	// buffer is reused.
	deliver := r.deliver[:0]
	if r.out.direct() {
		deliver = make([]Event, 0, len(r.events))
	}
	seen := 0
	for i := 0; i < len(r.events); {
		j := i + 1
		for j < len(r.events) && r.events[j].PodUID == r.events[i].PodUID {
			j++
		}
		uid := r.events[i].PodUID
		start := len(deliver)
		for _, ev := range r.events[i:j] {
			if ev.Type != ContainerChanged {
				deliver = append(deliver, ev)
			}
		}
		r.addTarget(uid, deliver[start:len(deliver):len(deliver)])
		if _, ok := r.reinspect[uid]; ok {
			seen++
		}
		i = j
	}
	if !r.out.direct() {
		r.deliver = deliver
	}
	if seen == len(r.reinspect) {
		return
	}
	changed := make(map[types.UID]struct{}, len(r.targets))
	for _, t := range r.targets {
		changed[t.uid] = struct{}{}
	}
	n := len(r.targets)
	for uid := range r.reinspect {
		if _, ok := changed[uid]; !ok {
			r.addTarget(uid, nil)
		}
	}
	slices.SortFunc(r.targets[n:], func(a, b target) int { return cmp.Compare(a.uid, b.uid) })
}

func (r *relister) addTarget(uid types.UID, events []Event) {
	t := target{uid: uid, events: events}
	var ok bool
	r.ids, t.podIDs, ok = r.tracker.pod(r.ids, uid)
	t.gone = !ok
	r.targets = append(r.targets, t)
}

// inspectAll inspects the targets with at most r.parallelism inspections in
// flight and sets their ok.
func (r *relister) inspectAll(ctx context.Context, targets []target, ts time.Time) {
	n := min(r.parallelism, len(targets))
	r.workers = slices.Grow(r.workers[:0], n)[:n]
	for w := range r.workers {
		r.workers[w] = callTimer{parent: ctx, clock: r.clock, timeout: r.timeout}
	}
	parallel(len(targets), n, func(w, i int) {
		targets[i].ok = r.inspect(&r.workers[w], &targets[i], ts)
	})
	for w := range r.workers {
		r.workers[w].close()
	}
	clear(r.workers)
}

// parallel calls fn(w, 0..n-1) with at most par calls in flight and returns
// when all are done; w (below par) is the goroutine that makes the call,
// which makes no other call meanwhile. The calling goroutine takes part (as
// w 0), so par 1 runs serially.
func parallel(n, par int, fn func(w, i int)) {
	var next atomic.Int64
	work := func(w int) {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			fn(w, i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < min(par, n); w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
}

// callTimer bounds runtime calls made one after another by the timeout,
// each: one context and one timer serve them all, the timer re-armed for
// each call, and only a call that timed out costs a new pair. The zero
// timeout means no bound.
type callTimer struct {
	parent  context.Context
	clock   clock.WithDelayedExecution
	timeout time.Duration

	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  clock.Timer
}

// begin returns the context of the next call, which the timer cancels
// (with errRuntimeTimeout as the cause) once the timeout has passed.
func (c *callTimer) begin() context.Context {
	switch {
	case c.ctx == nil:
		ctx, cancel := context.WithCancelCause(c.parent)
		c.ctx, c.cancel = ctx, cancel
		if c.timeout > 0 {
			c.timer = c.clock.AfterFunc(c.timeout, func() { cancel(errRuntimeTimeout) })
		}
	case c.timer != nil:
		c.timer.Reset(c.timeout)
	}
	return c.ctx
}

// end ends the call begun last. A context that the timer cancelled, or is
// about to, serves no further call.
func (c *callTimer) end() {
	if c.timer == nil || c.timer.Stop() {
		return
	}
	c.close()
}

// close releases the context and the timer.
func (c *callTimer) close() {
	if c.ctx == nil {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.cancel(nil)
	c.ctx, c.cancel, c.timer = nil, nil, nil
}

// inspect brings the cache up to date for one pod and queues its events.
func (r *relister) inspect(c *callTimer, t *target, ts time.Time) bool {
	if t.gone {
		// Nothing left in the runtime: the pod's entry goes.
		r.cache.Delete(t.uid, ts)
		r.handOver(t.events, nil)
		return true
	}
	status, ok := r.inspectPod(c, t.uid, ts, func(ctx context.Context) (*cri.PodStatus, error) {
		return cri.InspectPod(ctx, r.rt, t.uid, t.name, t.namespace, t.sandboxes, t.containers)
	})
	if ok {
		r.cache.Set(t.uid, status, nil, ts)
		r.handOver(t.events, status)
	}
	return ok
}

// store runs one pod's inspection as inspectPod does and writes a status it
// gets to the cache.
func (r *relister) store(ctx context.Context, uid types.UID, ts time.Time, inspect func(context.Context) (*cri.PodStatus, error)) (*cri.PodStatus, bool) {
	c := callTimer{parent: ctx, clock: r.clock, timeout: r.timeout}
	defer c.close()
	status, ok := r.inspectPod(&c, uid, ts, inspect)
	if ok {
		r.cache.Set(uid, status, nil, ts)
	}
	return status, ok
}

// inspectPod runs one pod's inspection under RuntimeTimeout (c) and returns
// the status stamped ts, for the caller to write to the cache; an error is
// written to the cache at once, so that waiters get the error rather than a
// status that may be stale (upstream's rule). Nothing is written when c's
// parent context ended.
func (r *relister) inspectPod(c *callTimer, uid types.UID, ts time.Time, inspect func(context.Context) (*cri.PodStatus, error)) (*cri.PodStatus, bool) {
	ictx := c.begin()
	status, err := inspect(ictx)
	if err != nil {
		err = withCause(ictx, err)
	}
	c.end()
	if err != nil {
		if c.parent.Err() == nil {
			r.log.Warn("pleg: inspect pod failed; retrying", "pod", uid, "err", err)
			r.cache.Set(uid, nil, err, ts)
		}
		return nil, false
	}
	status.Timestamp = ts
	keepIPs(r.cache, status)
	return status, true
}

// handOver queues a pod's events, or hands them to the consumer function,
// logging the exit code of the containers that died. The caller has written
// the pod's status (or its removal) to the cache first, so that whoever
// acts on an event finds the cache as new as the relist that produced it:
// a pod worker woken by ContainerDied, whose wait for a status newer than
// its last sync the previous relist's global timestamp may already satisfy,
// syncs on the state after the exit (upstream's order). events is handed
// over as it is: the caller gives it up.
func (r *relister) handOver(events []Event, status *cri.PodStatus) {
	if r.log.Enabled(context.Background(), slog.LevelDebug) {
		for _, ev := range events {
			if ev.Type != ContainerDied || ev.Sandbox {
				continue
			}
			if c := status.ContainerByID(ev.ContainerID); c != nil {
				r.log.Debug("pleg: container finished", "pod", ev.PodUID, "container", ev.ContainerID,
					"name", cri.ContainerName(c), "exitCode", c.GetExitCode())
			}
		}
	}
	r.out.push(events...)
}

func (r *relister) setInflight(t time.Time) {
	r.hmu.Lock()
	r.inflight = t
	r.hmu.Unlock()
}

// healthy is upstream's health check: unhealthy until a relist has succeeded,
// and when the last success started more than threshold ago. A relist in
// progress does not count as a success, however long it takes, and its age is
// in the message.
func (r *relister) healthy(threshold time.Duration) (bool, error) {
	now := r.clock.Now()
	r.hmu.Lock()
	last, inflight := r.lastSeen, r.inflight
	r.hmu.Unlock()
	if last.IsZero() {
		return false, errors.New("pleg has yet to be successful")
	}
	r.metrics.LastSeen(last)
	if elapsed := now.Sub(last); elapsed > threshold {
		if !inflight.IsZero() {
			return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v; a relist has been running for %v",
				elapsed, threshold, now.Sub(inflight))
		}
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}

// keepIPs keeps a pod's last known IPs when the new status has none and no
// ready sandbox: a pod torn down keeps reporting the IPs it had, as the API
// expects of a finished pod (upstream's rule).
func keepIPs(c *Cache, status *cri.PodStatus) {
	if len(status.IPs) > 0 {
		return
	}
	for _, sb := range status.Sandboxes {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			return
		}
	}
	if old, err := c.Get(status.UID); err == nil && old != nil {
		status.IPs = old.IPs
	}
}
