package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ErrInvalidAddress is wrapped by NewHealthz's error for an address it
// cannot listen on.
var ErrInvalidAddress = errors.New("invalid address")

// DefaultHealthzRetryPeriod is how long upstream kubelet waits before it
// tries its healthz port again.
const DefaultHealthzRetryPeriod = 5 * time.Second

// HealthzOptions configure a Healthz.
type HealthzOptions struct {
	// Addr is host:port to listen on (upstream's healthzBindAddress and
	// healthzPort); port 0 picks a free port, which Addr tells.
	Addr string
	// Checks are /healthz's checks after "ping". Upstream's healthz port
	// has none: it answers "ok" while the process serves.
	Checks []HealthCheck
	// RetryPeriod is how long after Addr could not be listened on (or
	// serving it failed) it is tried again; zero means
	// DefaultHealthzRetryPeriod.
	RetryPeriod time.Duration
	// Clock times RetryPeriod; nil means the real clock.
	Clock clock.Clock
	// Logger receives the failures to listen; nil discards them.
	Logger *slog.Logger
}

// Healthz is upstream kubelet's healthz port: /healthz and
// /healthz/<check> over plain HTTP without authentication, with the same
// handler as the Server's, and nothing else (404). Where the port cannot
// be listened on (another process has it), it logs the failure and tries
// again every RetryPeriod, and the node runs on without it, as upstream's.
type Healthz struct {
	addr   string
	period time.Duration
	clock  clock.Clock
	log    *slog.Logger
	srv    *Server

	mu       sync.Mutex
	listener net.Listener // while it serves
}

// NewHealthz builds a Healthz; it listens on nothing until Run. An Addr
// that is no host:port with a port from 0 to 65535 is an error wrapping
// ErrInvalidAddress.
func NewHealthz(o HealthzOptions) (*Healthz, error) {
	_, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("healthz %q: %w: %w", o.Addr, ErrInvalidAddress, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("healthz %q: %w: port %q is not a number from 0 to 65535", o.Addr, ErrInvalidAddress, port)
	}
	h := &Healthz{addr: o.Addr, period: o.RetryPeriod, clock: o.Clock, log: o.Logger}
	if h.period <= 0 {
		h.period = DefaultHealthzRetryPeriod
	}
	if h.clock == nil {
		h.clock = clock.RealClock{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.srv = &Server{opts: Options{ShutdownTimeout: 5 * time.Second}, log: h.log, checks: healthChecks(Options{Checks: o.Checks})}
	mux := http.NewServeMux()
	h.srv.healthRoutes(mux)
	h.srv.handler = mux
	return h, nil
}

// Handler returns the healthz port's handler.
func (h *Healthz) Handler() http.Handler { return h.srv.handler }

// Addr returns the address it serves on, or nil while it does not.
func (h *Healthz) Addr() net.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listener == nil {
		return nil
	}
	return h.listener.Addr()
}

// Run listens and serves until ctx ends, and returns nil once it has
// stopped. A failure to listen, or to serve, is logged ("Failed to start
// healthz server") and Addr tried again RetryPeriod after it; the retry is
// timed before the failure is logged.
func (h *Healthz) Run(ctx context.Context) error {
	for {
		err := h.serveOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		t := h.clock.NewTimer(h.period)
		h.log.Error("Failed to start healthz server", "addr", h.addr, "err", err, "retryIn", h.period)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// serveOnce listens on the address and serves until ctx ends or serving
// fails.
func (h *Healthz) serveOnce(ctx context.Context) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", h.addr)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.listener = l
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.listener = nil
		h.mu.Unlock()
	}()
	h.log.Info("Serving healthz", "addr", l.Addr().String())
	return h.srv.Serve(ctx, l)
}
