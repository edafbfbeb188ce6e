package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Generic is the relisting PLEG: every RelistPeriod it lists the runtime's
// sandboxes and containers, diffs them against what it saw before, inspects
// the pods that changed (Parallelism at a time), writes their statuses to the
// Cache, queues their events, and advances the Cache's global timestamp.
//
// Build it with NewGeneric, take Events and Cache, then call Run.
type Generic struct {
	r         *relister
	out       *outbox
	period    time.Duration
	threshold time.Duration
	started   atomic.Bool
}

// NewGeneric returns a relisting PLEG. It starts nothing; Run does. It fails,
// wrapping ErrInvalidOptions, when the runtime is missing or a value is
// negative.
func NewGeneric(opts GenericOptions) (*Generic, error) {
	if opts.Runtime == nil {
		return nil, fmt.Errorf("pleg: new generic: runtime is required: %w", ErrInvalidOptions)
	}
	var errs []error
	period, err := orDefault("relist period", opts.RelistPeriod, DefaultRelistPeriod)
	errs = append(errs, err)
	threshold, err := orDefault("relist threshold", opts.RelistThreshold, DefaultRelistThreshold)
	errs = append(errs, err)
	par, err := orDefault("parallelism", opts.Parallelism, DefaultParallelism)
	errs = append(errs, err)
	timeout, err := orDefault("runtime timeout", opts.RuntimeTimeout, DefaultRuntimeTimeout)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pleg: new generic: %w", err)
	}
	c := resolveCommon(opts.Cache, opts.Clock, opts.Logger, opts.Metrics)
	out := newOutbox(c.metrics, opts.OnEvents)
	return &Generic{
		r:         newRelister(opts.Runtime, c.cache, c.clock, c.log, c.metrics, out, par, timeout),
		out:       out,
		period:    period,
		threshold: threshold,
	}, nil
}

// Events returns the channel of pod lifecycle events. It is unbuffered: events
// wait in a queue per pod, where they coalesce when the consumer falls behind
// (see the package documentation), and are never dropped. The channel is
// closed when Run returns.
func (g *Generic) Events() <-chan Event { return g.out.ch }

// Cache returns the cache the PLEG writes.
func (g *Generic) Cache() *Cache { return g.r.cache }

// Run relists until ctx ends: a relist at once, then one RelistPeriod after
// each relist ends. It returns nil when ctx ends, after every goroutine it
// started has ended and the Events channel is closed. Run may be called once.
func (g *Generic) Run(ctx context.Context) error {
	if !g.started.CompareAndSwap(false, true) {
		return errors.New("pleg: generic: Run called more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { g.out.deliver(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	for {
		if err := g.r.relist(ctx); err != nil && ctx.Err() == nil {
			g.r.log.Error("pleg: relist failed", "err", err)
		}
		t := g.r.clock.NewTimer(g.period)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Relist runs one relist now, as Run does every period: useful to force one,
// and in tests. It returns an error when the runtime could not be listed
// (inspection failures are retried on the next relist, not returned).
// Relists never overlap: a call waits for one in progress.
func (g *Generic) Relist(ctx context.Context) error { return g.r.relist(ctx) }

// Healthy reports whether the PLEG is working: false with upstream's message
// until a relist has succeeded, and when the last successful relist started
// more than RelistThreshold ago. A relist stuck in the runtime does not count
// as a success however long it runs, and the message says how long it has
// been running. It has the signature of upstream's health checks.
func (g *Generic) Healthy() (bool, error) { return g.r.healthy(g.threshold) }
