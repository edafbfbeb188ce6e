package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Evented is the PLEG that follows the runtime's container events
// (GetContainerEvents) and relists only as a safety net.
//
// Each event carries the pod's sandbox and container statuses; Evented
// writes them to the Cache stamped with the event's time, and since the cache
// keeps only the newest status per pod, an event that arrives late or twice is
// ignored. A relist runs every RelistPeriod (300s) while events flow, and at
// once whenever the stream fails or (re)connects, so that nothing that
// happened while no stream was open is missed.
//
// When the stream fails MaxStreamFailures times in a row (or the runtime does
// not implement it), Evented falls back to relisting every
// FallbackRelistPeriod (1s), says so in the log and through
// Metrics.StreamState, and keeps trying to reopen the stream, with a growing
// wait; once a stream delivers an event or stays open for a
// FallbackRelistPeriod, events resume and relisting slows down again.
//
// Pod workers wait on the Cache for a status newer than their last sync.
// Upstream's evented PLEG released them by bumping the cache's global
// timestamp to "now" every two seconds, which could hand a worker a status
// that predated events still in flight (a container seen "created" after the
// worker had started it). Evented instead inspects the pods that are waited
// on, as soon as a wait begins and every CacheRefreshPeriod, and stores what
// it found stamped with the time the inspection began.
type Evented struct {
	rt  EventedRuntime
	r   *relister
	out *outbox
	c   common

	relistPeriod, relistThreshold     time.Duration
	fallbackPeriod, fallbackThreshold time.Duration
	maxFailures                       int
	retryPeriod, refreshPeriod        time.Duration
	parallelism                       int
	timeout                           time.Duration

	kick    chan struct{} // capacity 1: relist now
	started atomic.Bool

	mu       sync.Mutex // guards the stream state below
	state    StreamState
	fallback bool
	failures int // consecutive, since the last connected stream
}

// NewEvented returns an evented PLEG. It starts nothing; Run does. It fails,
// wrapping ErrInvalidOptions, when the runtime is missing or a value is
// negative.
func NewEvented(opts EventedOptions) (*Evented, error) {
	if opts.Runtime == nil {
		return nil, fmt.Errorf("pleg: new evented: runtime is required: %w", ErrInvalidOptions)
	}
	e := &Evented{rt: opts.Runtime, kick: make(chan struct{}, 1)}
	var errs []error
	set := func(dst *time.Duration, name string, v, def time.Duration) {
		var err error
		*dst, err = orDefault(name, v, def)
		errs = append(errs, err)
	}
	set(&e.relistPeriod, "relist period", opts.RelistPeriod, DefaultEventedRelistPeriod)
	set(&e.relistThreshold, "relist threshold", opts.RelistThreshold, DefaultEventedRelistThreshold)
	set(&e.fallbackPeriod, "fallback relist period", opts.FallbackRelistPeriod, DefaultRelistPeriod)
	set(&e.fallbackThreshold, "fallback relist threshold", opts.FallbackRelistThreshold, DefaultRelistThreshold)
	set(&e.retryPeriod, "stream retry period", opts.StreamRetryPeriod, DefaultStreamRetryPeriod)
	set(&e.refreshPeriod, "cache refresh period", opts.CacheRefreshPeriod, DefaultCacheRefreshPeriod)
	set(&e.timeout, "runtime timeout", opts.RuntimeTimeout, DefaultRuntimeTimeout)
	var err error
	e.maxFailures, err = orDefault("max stream failures", opts.MaxStreamFailures, DefaultMaxStreamFailures)
	errs = append(errs, err)
	e.parallelism, err = orDefault("parallelism", opts.Parallelism, DefaultParallelism)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pleg: new evented: %w", err)
	}
	e.c = resolveCommon(opts.Cache, opts.Clock, opts.Logger, opts.Metrics)
	e.out = newOutbox(e.c.metrics, opts.OnEvents)
	e.r = newRelister(opts.Runtime, e.c.cache, e.c.clock, e.c.log, e.c.metrics, e.out, e.parallelism, e.timeout)
	return e, nil
}

// Events returns the channel of pod lifecycle events, from the stream and from
// relists alike. As with Generic, it is unbuffered, backed by a coalescing
// queue per pod, never drops an event, and is closed when Run returns.
func (e *Evented) Events() <-chan Event { return e.out.ch }

// Cache returns the cache the PLEG writes.
func (e *Evented) Cache() *Cache { return e.c.cache }

// Relist runs one relist now (see Generic.Relist).
func (e *Evented) Relist(ctx context.Context) error { return e.r.relist(ctx) }

// Healthy reports whether the PLEG is working, as Generic.Healthy does, with
// the threshold of the current mode: RelistThreshold (10m) while events flow,
// FallbackRelistThreshold (3m) while relisting is all there is.
func (e *Evented) Healthy() (bool, error) {
	e.mu.Lock()
	threshold := e.relistThreshold
	if e.fallback {
		threshold = e.fallbackThreshold
	}
	e.mu.Unlock()
	return e.r.healthy(threshold)
}

// StreamState returns the state of the event stream: StreamFallback while the
// PLEG relists in place of events (even while it tries a new stream).
func (e *Evented) StreamState() StreamState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fallback {
		return StreamFallback
	}
	return e.state
}

// Run follows the event stream and relists until ctx ends. It returns nil
// when ctx ends, after every goroutine it started has ended and the Events
// channel is closed. Run may be called once.
func (e *Evented) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("pleg: evented: Run called more than once")
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.out.deliver(ctx) })
	wg.Go(func() { e.relistLoop(ctx) })
	wg.Go(func() { e.streamLoop(ctx) })
	wg.Go(func() { e.refreshLoop(ctx) })
	wg.Wait()
	return nil
}

// relistNow asks the relist loop for a relist as soon as it can.
func (e *Evented) relistNow() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Evented) relistPeriodNow() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fallback {
		return e.fallbackPeriod
	}
	return e.relistPeriod
}

func (e *Evented) relistLoop(ctx context.Context) {
	for {
		if err := e.r.relist(ctx); err != nil && ctx.Err() == nil {
			e.c.log.Error("pleg: relist failed", "err", err)
		}
		t := e.c.clock.NewTimer(e.relistPeriodNow())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-e.kick:
			t.Stop()
		}
	}
}

func (e *Evented) streamLoop(ctx context.Context) {
	for {
		err := e.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := e.streamFailed(err)
		if wait == 0 {
			continue
		}
		t := e.c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// follow opens one event stream and handles its events until it fails or
// ctx ends.
func (e *Evented) follow(ctx context.Context) error {
	e.setState(StreamConnecting)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// A stream that stays open for a fallback relist period without
	// failing counts as connected, even if nothing happens on the node.
	proof := e.c.clock.NewTimer(e.fallbackPeriod)
	wg.Go(func() {
		select {
		case <-proof.C():
			e.connected()
		case <-sctx.Done():
			proof.Stop()
		}
	})
	for ev, err := range e.rt.GetContainerEvents(sctx) {
		if err != nil {
			return err
		}
		e.connected()
		e.handle(ev)
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("event stream ended")
}

func (e *Evented) setState(s StreamState) {
	e.mu.Lock()
	e.state = s
	e.mu.Unlock()
	e.c.metrics.StreamState(s)
}

// connected records a stream that works: the failure count resets, a
// fallback ends, and a relist covers whatever happened before the stream
// opened.
func (e *Evented) connected() {
	e.mu.Lock()
	if e.state == StreamConnected {
		e.mu.Unlock()
		return
	}
	e.state = StreamConnected
	e.failures = 0
	resumed := e.fallback
	e.fallback = false
	e.mu.Unlock()
	e.c.metrics.StreamState(StreamConnected)
	if resumed {
		e.c.log.Info("pleg: container event stream is back; relisting only as a safety net", "relistPeriod", e.relistPeriod)
	} else {
		e.c.log.Debug("pleg: following container events")
	}
	e.relistNow()
}

// streamFailed records a failed stream and returns how long to wait before
// the next attempt.
func (e *Evented) streamFailed(err error) time.Duration {
	unimplemented := errors.Is(err, cri.ErrUnimplemented)
	e.mu.Lock()
	e.state = StreamFailed
	e.failures++
	failures := e.failures
	fallback := !e.fallback && (failures >= e.maxFailures || unimplemented)
	if fallback {
		e.fallback = true
	}
	e.mu.Unlock()
	e.c.metrics.StreamState(StreamFailed)
	e.c.log.Warn("pleg: container event stream failed", "err", err, "consecutiveFailures", failures)
	if fallback {
		e.c.log.Warn("pleg: falling back to relisting until the container event stream is back",
			"relistPeriod", e.fallbackPeriod, "consecutiveFailures", failures)
		e.c.metrics.StreamState(StreamFallback)
	}
	e.relistNow()
	// The first failure is retried at once: a stream that broke once (the
	// runtime's queue overflowed in a burst, a connection reset) usually
	// works again, and until it does only relists see the pods. Repeated
	// failures wait StreamRetryPeriod, doubling up to a minute.
	if failures == 1 && !unimplemented {
		return 0
	}
	limit := max(maxStreamRetryPeriod, e.retryPeriod)
	wait := e.retryPeriod
	for i := 2; i < failures && wait < limit; i++ {
		wait *= 2
	}
	if unimplemented || wait > limit {
		wait = limit
	}
	return wait
}

// handle writes the status an event carries to the cache and queues its
// pod lifecycle events. The cache refuses a status older than the one it
// holds; then the event is stale and produces nothing, except a removal,
// which is always reported.
func (e *Evented) handle(ev *runtimeapi.ContainerEventResponse) {
	status, err := cri.PodStatusFromEvent(ev)
	if err != nil {
		// The sandbox was already gone when the runtime built the event;
		// its own removal event, or a relist, covers it.
		e.c.log.Debug("pleg: ignoring container event", "err", err)
		return
	}
	uid, ts := status.UID, status.Timestamp
	sandbox := ev.GetContainerId() == status.Sandbox().GetId()
	if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		if sandbox {
			e.deleteSandbox(uid, ev.GetContainerId(), ts)
		} else {
			e.c.cache.Set(uid, status, nil, ts)
		}
		e.out.push(
			Event{PodUID: uid, Type: ContainerDied, ContainerID: ev.GetContainerId(), Sandbox: sandbox},
			Event{PodUID: uid, Type: ContainerRemoved, ContainerID: ev.GetContainerId(), Sandbox: sandbox},
		)
		return
	}
	keepIPs(e.c.cache, status)
	if !e.c.cache.Set(uid, status, nil, ts) {
		e.c.log.Debug("pleg: ignoring stale container event", "pod", uid, "container", ev.GetContainerId(),
			"type", ev.GetContainerEventType().String(), "createdAt", ts)
		return
	}
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		e.out.push(Event{PodUID: uid, Type: ContainerStarted, ContainerID: ev.GetContainerId(), Sandbox: sandbox})
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		e.out.push(Event{PodUID: uid, Type: ContainerDied, ContainerID: ev.GetContainerId(), Sandbox: sandbox})
	}
	// CREATED only updates the cache, as upstream: the container is not
	// running yet and no sync is due.
}

// deleteSandbox forgets a pod whose sandbox was removed, unless the pod has a
// newer sandbox in the cache (only the old one went).
func (e *Evented) deleteSandbox(uid types.UID, sandboxID string, ts time.Time) {
	cur, err := e.c.cache.Get(uid)
	if err == nil {
		if newest := cur.Sandbox(); newest != nil && newest.GetId() != sandboxID {
			return
		}
	}
	e.c.cache.Delete(uid, ts)
}

func (e *Evented) inFallback() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fallback
}

func (e *Evented) refreshLoop(ctx context.Context) {
	for {
		if !e.inFallback() {
			e.refresh(ctx)
		}
		t := e.c.clock.NewTimer(e.refreshPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-e.c.cache.waited:
			t.Stop()
		}
	}
}

// refresh inspects the pods that workers wait on, so that a waiter gets a
// status taken after the time it waits past, rather than one assembled from
// events that may still be in flight.
func (e *Evented) refresh(ctx context.Context) {
	now := e.c.clock.Now()
	uids := e.c.cache.waitedOn(now)
	if len(uids) == 0 {
		return
	}
	parallel(len(uids), e.parallelism, func(_, i int) {
		if ctx.Err() == nil {
			e.refreshPod(ctx, uids[i], now)
		}
	})
}

func (e *Evented) refreshPod(ctx context.Context, uid types.UID, ts time.Time) {
	name, namespace := e.c.cache.podRef(uid)
	e.r.store(ctx, uid, ts, func(ctx context.Context) (*cri.PodStatus, error) {
		return cri.GetPodStatus(ctx, e.rt, uid, name, namespace)
	})
}
