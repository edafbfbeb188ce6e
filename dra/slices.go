package dra

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/stats"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultWipingDelay is how long a DRA driver may have no connected
// kubelet plugin before the node deletes its ResourceSlices (upstream's
// 30 seconds).
const DefaultWipingDelay = 30 * time.Second

// ResourceSlices deletes the node's ResourceSlices (resource.k8s.io/v1) on
// the API server, as upstream's kubelet does when a DRA driver is gone and
// when it starts (examples/apiserver's ResourceSlices, a DeleteCollection
// with the field selectors spec.nodeName and spec.driver). The
// implementation knows its node.
type ResourceSlices interface {
	// DeleteResourceSlices deletes the node's ResourceSlices of driver,
	// or of every driver when driver is "". A NotFound error of the API
	// server's counts as done; any other error is retried.
	DeleteResourceSlices(ctx context.Context, driver string) error
}

// ResourceSlicesFunc adapts a function to ResourceSlices.
type ResourceSlicesFunc func(ctx context.Context, driver string) error

// DeleteResourceSlices calls f.
func (f ResourceSlicesFunc) DeleteResourceSlices(ctx context.Context, driver string) error {
	return f(ctx, driver)
}

var _ ResourceSlices = ResourceSlicesFunc(nil)

// The retries of a wipe, upstream's wait.Backoff: 1 second doubling, up to
// 20% more at random, at most 5 minutes, at most 100 steps.
const (
	wipeFirstBackoff = time.Second
	wipeMaxBackoff   = 5 * time.Minute
	wipeSteps        = 100
	wipeJitter       = 0.2
)

// wipeBackoff is how long to wait before the next try of a wipe once
// failed tries (one or more) have failed, r in [0, 1) being the random
// draw for its jitter; false when there is to be no next try. As
// upstream's backoff, the wait doubles from wipeFirstBackoff and the
// tries end with the wait after which the next would pass
// wipeMaxBackoff (upstream waits that one out, then gives up without a
// try: 9 tries, the last 255 seconds after the first, plus jitter), or
// after wipeSteps tries.
func wipeBackoff(failed int, r float64) (time.Duration, bool) {
	if failed < 1 || failed >= wipeSteps {
		return 0, false
	}
	d := wipeFirstBackoff
	for range failed - 1 {
		d *= 2
	}
	if 2*d > wipeMaxBackoff {
		return 0, false
	}
	return d + time.Duration(r*wipeJitter*float64(d)), true
}

// wipeDecision is what a change of a driver's plugins means for its
// ResourceSlices, as upstream's sync decides it: a driver with a connected
// plugin cancels its pending wipe; one without schedules one unless one is
// pending already, whose time then stands.
type wipeDecision int

const (
	wipeKeep     wipeDecision = iota // nothing to do
	wipeCancel                       // cancel the pending wipe
	wipeSchedule                     // schedule a wipe after the delay
)

func decideWipe(usable, pending bool) wipeDecision {
	switch {
	case usable && pending:
		return wipeCancel
	case !usable && !pending:
		return wipeSchedule
	}
	return wipeKeep
}

// pendingWipe is a wipe of a driver's ResourceSlices scheduled on the
// clock; closing cancel before it fires cancels it. Once it has fired it
// runs to its end (or the Registry's Close), as upstream's.
type pendingWipe struct {
	cancel chan struct{}
}

// sync schedules or cancels the wipe of driver's ResourceSlices after a
// change of its plugins or of their connections (r.mu held).
func (r *Registry) sync(driver string) {
	if r.slices == nil || r.closed {
		return
	}
	usable := false
	for _, p := range r.plugins[driver] {
		usable = usable || p.connected
	}
	w := r.pending[driver]
	switch decideWipe(usable, w != nil) {
	case wipeCancel:
		delete(r.pending, driver)
		close(w.cancel)
		r.log.Debug("DRA driver is usable again, its ResourceSlices are kept", "driver", driver)
	case wipeSchedule:
		w = &pendingWipe{cancel: make(chan struct{})}
		r.pending[driver] = w
		r.log.Debug("DRA driver has no connected plugin, its ResourceSlices are deleted unless one is back in time",
			"driver", driver, "delay", r.wipingDelay)
		r.wipes.Add(1)
		go func() {
			defer r.wipes.Done()
			r.runPending(driver, w)
		}()
	}
}

// runPending waits out the wiping delay of w and, unless it was cancelled
// meanwhile, deletes driver's ResourceSlices.
func (r *Registry) runPending(driver string, w *pendingWipe) {
	t := r.clock.NewTimer(r.wipingDelay)
	select {
	case <-w.cancel:
		t.Stop()
		return
	case <-r.ctx.Done():
		t.Stop()
		return
	case <-t.C():
	}
	r.mu.Lock()
	fired := r.pending[driver] == w
	r.mu.Unlock()
	if !fired {
		return // cancelled as the timer fired
	}
	_ = r.wipe(r.ctx, driver)
	r.mu.Lock()
	if r.pending[driver] == w {
		delete(r.pending, driver)
	}
	r.mu.Unlock()
}

// WipeAll deletes every ResourceSlice of the node (Options.Slices with
// driver ""), as upstream's kubelet does in the background when it starts:
// no driver's plugin has registered yet, and pods should not be scheduled
// onto devices of a driver that may never come back. A failure is retried
// as the wipe of a gone driver is (see the package doc); it returns nil
// once deleted (or NotFound), else the last error, or the error of ctx
// when ctx ends or the Registry is closed first. Without Options.Slices
// it does nothing.
func (r *Registry) WipeAll(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	return r.wipe(ctx, "")
}

// wipe deletes the node's ResourceSlices of driver ("": all), with
// upstream's retries (wipeBackoff) and logs, until done, given up or ctx
// ends.
func (r *Registry) wipe(ctx context.Context, driver string) error {
	if r.slices == nil {
		return nil
	}
	log := r.log.With("driver", driver)
	for failed := 1; ; failed++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := r.slices.DeleteResourceSlices(ctx, driver)
		switch {
		case err == nil:
			log.Info("Deleted ResourceSlices")
			return nil
		case apierrors.IsNotFound(err):
			log.Debug("ResourceSlices not found, nothing to delete.")
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case apierrors.IsUnauthorized(err):
			// The node may still be getting its credentials.
			log.Debug("Deleting ResourceSlice failed, retrying", "err", err)
		default:
			log.Info("Deleting ResourceSlice failed, retrying", "err", err)
		}
		d, ok := wipeBackoff(failed, rand.Float64())
		if !ok {
			log.Error("Failed to delete ResourceSlices, giving up", "tries", failed, "err", err)
			return err
		}
		t := r.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// connMonitor tells the Registry when a plugin's gRPC connection comes
// and goes: the stats.Handler of the plugin's ClientConn, as upstream's.
type connMonitor struct {
	r *Registry
	p *plugin
}

var _ stats.Handler = connMonitor{}

func (connMonitor) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (connMonitor) HandleRPC(context.Context, stats.RPCStats)                         {}
func (connMonitor) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn notes whether the plugin is connected and syncs its driver's
// wipe. When the connection ends it asks for a new one, from a goroutine of
// its own (gRPC may hold a lock of its own while it calls HandleConn):
// without a call in flight gRPC would not try, and the plugin's return
// would go unnoticed.
func (m connMonitor) HandleConn(_ context.Context, s stats.ConnStats) {
	var connected bool
	switch s.(type) {
	case *stats.ConnBegin:
		connected = true
	case *stats.ConnEnd:
	default:
		return
	}
	r, p := m.r, m.p
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || p.removed {
		return
	}
	if !connected {
		go p.conn.Connect()
	}
	if p.connected != connected {
		r.log.Debug("Connection changed", "driver", p.driver, "endpoint", p.endpoint, "connected", connected)
	}
	p.connected = connected
	r.sync(p.driver)
}
