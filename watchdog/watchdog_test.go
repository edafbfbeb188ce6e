package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/watchdog"
)

func check(name string, err error) watchdog.Check {
	return watchdog.Check{Name: name, Check: func() error { return err }}
}

func TestUnhealthy(t *testing.T) {
	stuck := errors.New("sync loop took longer than expected")
	for _, tc := range []struct {
		name   string
		checks []watchdog.Check
		want   string
	}{
		{name: "none", want: ""},
		{name: "all pass", checks: []watchdog.Check{check("ping", nil), check("syncloop", nil)}, want: ""},
		{name: "one fails", checks: []watchdog.Check{check("ping", nil), check("syncloop", stuck)},
			want: "checker syncloop failed: sync loop took longer than expected"},
		{name: "the first failure", checks: []watchdog.Check{check("pleg", errors.New("pleg was last seen active 4m ago")), check("syncloop", stuck)},
			want: "checker pleg failed: pleg was last seen active 4m ago"},
		{name: "a nil check passes", checks: []watchdog.Check{{Name: "nil"}}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := watchdog.Unhealthy(tc.checks)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
	assert.ErrorIs(t, watchdog.Unhealthy([]watchdog.Check{check("syncloop", stuck)}), stuck)
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		timeout  time.Duration
		interval time.Duration
		err      error
	}{
		{timeout: 0, interval: 0},
		{timeout: 500 * time.Millisecond, err: watchdog.ErrTimeoutTooSmall},
		{timeout: time.Second, err: watchdog.ErrTimeoutTooSmall},
		{timeout: 1500 * time.Millisecond, interval: 750 * time.Millisecond},
		{timeout: 3 * time.Minute, interval: 90 * time.Second},
	} {
		t.Run(tc.timeout.String(), func(t *testing.T) {
			w, err := watchdog.New(watchdog.Options{Timeout: tc.timeout})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.EqualError(t, err, "configure watchdog timeout too small: "+tc.timeout.String())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.interval, w.Interval())
		})
	}
	_, err := watchdog.New(watchdog.Options{Timeout: -time.Second})
	assert.Error(t, err)
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name, usec, pid string
		want            time.Duration
		err             string
	}{
		{name: "no watchdog"},
		{name: "ours, no pid", usec: "4000000", want: 4 * time.Second},
		{name: "ours", usec: "4000000", pid: strconv.Itoa(os.Getpid()), want: 4 * time.Second},
		{name: "another process's", usec: "4000000", pid: strconv.Itoa(os.Getpid() + 1)},
		{name: "malformed", usec: "4s", err: `configure watchdog: error converting WATCHDOG_USEC: strconv.Atoi: parsing "4s": invalid syntax`},
		{name: "zero", usec: "0", err: "configure watchdog: error WATCHDOG_USEC must be a positive number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tc.usec)
			t.Setenv("WATCHDOG_PID", tc.pid)
			got, err := watchdog.Enabled()
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.usec, os.Getenv("WATCHDOG_USEC"), "left set")
		})
	}
}

// notifySocket listens where NOTIFY_SOCKET points, as systemd does for a
// unit, and returns what has arrived so far, without waiting.
func notifySocket(t *testing.T) func() []string {
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	raw, err := conn.SyscallConn()
	require.NoError(t, err)
	return func() []string {
		var got []string
		buf := make([]byte, 256)
		require.NoError(t, raw.Read(func(fd uintptr) bool {
			for {
				n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT)
				if err != nil {
					return true // EAGAIN: nothing more
				}
				got = append(got, string(buf[:n]))
			}
		}))
		return got
	}
}

// The real Notifier against a socket standing for systemd's: "WATCHDOG=1"
// arrives at once, then every half timeout while the node is healthy, and
// not while it is not.
func TestRunSystemdSocket(t *testing.T) {
	received := notifySocket(t)
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		healthy.Store(true)
		w, err := watchdog.New(watchdog.Options{Timeout: 4 * time.Second, Checks: []watchdog.Check{
			{Name: "ping", Check: func() error { return nil }},
			{Name: "syncloop", Check: func() error {
				if healthy.Load() {
					return nil
				}
				return errors.New("sync loop took longer than expected")
			}},
		}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()

		synctest.Wait()
		assert.Equal(t, []string{"WATCHDOG=1"}, received(), "the first tick at once")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, received(), "nothing before the interval")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"WATCHDOG=1"}, received(), "every 2s of a 4s timeout")

		healthy.Store(false)
		for range 3 {
			time.Sleep(2 * time.Second)
			synctest.Wait()
			assert.Empty(t, received(), "not while unhealthy")
		}
		healthy.Store(true)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"WATCHDOG=1"}, received(), "again once healthy")

		cancel()
		assert.NoError(t, <-done)
	})
}

// notifications records a fake Notifier's calls by their time since the
// start, failing the first fails of them.
type notifications struct {
	mu    sync.Mutex
	start time.Time
	fails int
	sent  bool
	at    []string
}

func (n *notifications) Notify(state string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.at = append(n.at, fmt.Sprintf("%s %s", time.Since(n.start), state))
	if len(n.at) <= n.fails {
		return false, errors.New("connection refused")
	}
	return n.sent, nil
}

func (n *notifications) calls() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.at...)
}

func TestRunRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int
		sent  bool
		want  []string // the calls in the first 5s of a 4s timeout
	}{
		{name: "sent", sent: true, want: []string{"0s WATCHDOG=1", "2s WATCHDOG=1", "4s WATCHDOG=1"}},
		{name: "one failure: sent again 1s later, the next tick 2s after that", fails: 1, sent: true,
			want: []string{"0s WATCHDOG=1", "1s WATCHDOG=1", "3s WATCHDOG=1", "5s WATCHDOG=1"}},
		{name: "two failures: the tick gives up", fails: 2, sent: true,
			want: []string{"0s WATCHDOG=1", "1s WATCHDOG=1", "3s WATCHDOG=1", "5s WATCHDOG=1"}},
		{name: "three failures", fails: 3, sent: true,
			want: []string{"0s WATCHDOG=1", "1s WATCHDOG=1", "3s WATCHDOG=1", "4s WATCHDOG=1"}},
		{name: "no socket: not retried", sent: false, want: []string{"0s WATCHDOG=1", "2s WATCHDOG=1", "4s WATCHDOG=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := &notifications{start: time.Now(), fails: tc.fails, sent: tc.sent}
				w, err := watchdog.New(watchdog.Options{Timeout: 4 * time.Second, Notifier: n})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- w.Run(ctx) }()
				time.Sleep(5 * time.Second)
				synctest.Wait()
				assert.Equal(t, tc.want, n.calls())
				cancel()
				assert.NoError(t, <-done)
			})
		})
	}
}

func TestRunNotEnabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := watchdog.New(watchdog.Options{Notifier: watchdog.NotifierFunc(func(string) (bool, error) {
			t.Error("notified without a timeout")
			return true, nil
		})})
		require.NoError(t, err)
		assert.NoError(t, w.Run(t.Context()), "returns at once")
	})
}
