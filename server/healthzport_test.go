package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/server"
)

// logMessages is a slog handler that hands each record's message to a
// channel, for a test to wait on what the server did.
type logMessages chan string

func (logMessages) Enabled(context.Context, slog.Level) bool { return true }
func (m logMessages) Handle(_ context.Context, r slog.Record) error {
	m <- r.Message
	return nil
}
func (m logMessages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m logMessages) WithGroup(string) slog.Handler      { return m }

// runHealthz runs h until the test ends or stop is called, which returns
// Run's error.
func runHealthz(t *testing.T, h *server.Healthz) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { assert.NoError(t, stop()) })
	return stop
}

// onTakenPort builds a Healthz on a port another listener has, on a fake
// clock, logging to logs.
func onTakenPort(t *testing.T, retry time.Duration) (taken net.Listener, clk *clocktesting.FakeClock, logs logMessages, h *server.Healthz) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	clk = clocktesting.NewFakeClock(time.Unix(1e9, 0))
	logs = make(logMessages, 10)
	h, err = server.NewHealthz(server.HealthzOptions{Addr: taken.Addr().String(), Clock: clk, Logger: slog.New(logs), RetryPeriod: retry})
	require.NoError(t, err)
	return taken, clk, logs, h
}

// get returns the status and body of a GET of url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// The healthz port serves /healthz and its checks over plain HTTP, and
// nothing else.
func TestHealthzServes(t *testing.T) {
	logs := make(logMessages, 10)
	h, err := server.NewHealthz(server.HealthzOptions{Addr: "127.0.0.1:0", Logger: slog.New(logs)})
	require.NoError(t, err)
	assert.Nil(t, h.Addr(), "before Run")
	runHealthz(t, h)
	require.Equal(t, "Serving healthz", <-logs)
	base := "http://" + h.Addr().String()
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/healthz/ping", "ok", http.StatusOK},
		{"/healthz?verbose", "[+]ping ok\nhealthz check passed\n", http.StatusOK},
		{"/healthz/syncloop", "404 page not found\n", http.StatusNotFound},
		{"/pods", "404 page not found\n", http.StatusNotFound},
		{"/metrics", "404 page not found\n", http.StatusNotFound},
		{"/stats/summary", "404 page not found\n", http.StatusNotFound},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, base+tc.path)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.want, body)
		})
	}
}

// Checks given run after ping, as on the Server.
func TestHealthzChecks(t *testing.T) {
	logs := make(logMessages, 10)
	h, err := server.NewHealthz(server.HealthzOptions{Addr: "127.0.0.1:0", Logger: slog.New(logs), Checks: []server.HealthCheck{
		{Name: "pleg", Check: func(*http.Request) error { return errors.New("pleg was last seen active 4m0s ago") }}}})
	require.NoError(t, err)
	runHealthz(t, h)
	require.Equal(t, "Serving healthz", <-logs)
	code, body := get(t, "http://"+h.Addr().String()+"/healthz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "[+]ping ok\n[-]pleg failed: reason withheld\nhealthz check failed\n", body)
}

// An address it could never listen on is refused by NewHealthz, not
// retried for ever.
func TestHealthzInvalidAddress(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536", "127.0.0.1:-1"} {
		t.Run(addr, func(t *testing.T) {
			_, err := server.NewHealthz(server.HealthzOptions{Addr: addr})
			require.ErrorIs(t, err, server.ErrInvalidAddress)
		})
	}
	for _, addr := range []string{":10248", "[::1]:10248", "localhost:0", "0.0.0.0:65535"} {
		_, err := server.NewHealthz(server.HealthzOptions{Addr: addr})
		assert.NoError(t, err, addr)
	}
}

// A port another process has is logged and tried again every retry
// period, on the clock, until it is free; the node is not failed.
func TestHealthzRetriesAPortInUse(t *testing.T) {
	taken, clk, logs, h := onTakenPort(t, 0)
	runHealthz(t, h)

	// The retry is timed before the failure is logged: once the log is
	// seen, stepping the clock fires it.
	require.Equal(t, "Failed to start healthz server", <-logs)
	assert.Nil(t, h.Addr())
	clk.Step(server.DefaultHealthzRetryPeriod - time.Millisecond)
	assert.Empty(t, logs, "not tried again before the period")
	clk.Step(time.Millisecond)
	require.Equal(t, "Failed to start healthz server", <-logs, "still taken")

	require.NoError(t, taken.Close())
	clk.Step(server.DefaultHealthzRetryPeriod)
	require.Equal(t, "Serving healthz", <-logs)
	assert.Equal(t, taken.Addr().String(), h.Addr().String())
	code, body := get(t, "http://"+taken.Addr().String()+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
}

// Run returns when its context ends while it waits to try again.
func TestHealthzStopsWhileWaiting(t *testing.T) {
	_, clk, logs, h := onTakenPort(t, time.Minute)
	stop := runHealthz(t, h)
	require.Equal(t, "Failed to start healthz server", <-logs)
	require.NoError(t, stop())
	assert.False(t, clk.HasWaiters(), "the retry's timer stopped")
}
