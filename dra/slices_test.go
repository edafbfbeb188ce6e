package dra_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

// The tests of the wiping of ResourceSlices run in synctest bubbles: the
// plugins are in memory, the Registry's clock is the real one, which in
// a bubble is the bubble's, and time.Sleep moves it (with gRPC's own
// reconnection back-off).

// wipe is one DeleteResourceSlices call: its driver ("" for all) and when,
// since the test's start.
type wipe struct {
	Driver string
	At     time.Duration
}

// slices records the calls and answers them with fail's error (nil: done).
type slices struct {
	start time.Time
	fail  func(n int, driver string) error // n counts from 1

	mu    sync.Mutex
	calls []wipe
}

func newSlices() *slices { return &slices{start: time.Now()} }

func (s *slices) DeleteResourceSlices(_ context.Context, driver string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, wipe{driver, time.Since(s.start)})
	if s.fail != nil {
		return s.fail(len(s.calls), driver)
	}
	return nil
}

// failWith sets fail.
func (s *slices) failWith(fail func(n int, driver string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

func (s *slices) Calls() []wipe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wipe(nil), s.calls...)
}

// since is the time since the test's start.
func (s *slices) since() time.Duration { return time.Since(s.start) }

// endpoints dials the in-memory plugin that serves an endpoint now; a
// restarted plugin replaces the one before.
type endpoints struct {
	mu      sync.Mutex
	plugins map[string]*dratest.Plugin
}

func (e *endpoints) start(t *testing.T, driver, endpoint string) *dratest.Plugin {
	t.Helper()
	p, err := dratest.Start(dratest.Options{Driver: driver, Endpoint: endpoint, InMemory: true})
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.plugins == nil {
		e.plugins = map[string]*dratest.Plugin{}
	}
	e.plugins[endpoint] = p
	return p
}

func (e *endpoints) Dial(ctx context.Context, endpoint string) (net.Conn, error) {
	e.mu.Lock()
	p := e.plugins[endpoint]
	e.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("no plugin at %s", endpoint)
	}
	return p.Dial(ctx, endpoint)
}

func wipingManager(t *testing.T, s dra.ResourceSlices, dial dra.Dialer, delay time.Duration) *dra.Manager {
	t.Helper()
	m, err := dra.New(dra.Options{Slices: s, Dialer: dial, WipingDelay: delay})
	require.NoError(t, err)
	t.Cleanup(m.Registry().Close)
	return m
}

const gpu = "gpu.example.com"

// The e2e_node spec "must be removed if plugin stops after registration"
// and "must be functional after service reconnect": the plugin's service
// stops while it stays registered; the node notices the connection's end
// and deletes the driver's slices exactly DefaultWipingDelay later.
func TestWipeWhenThePluginStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e endpoints
		p := e.start(t, gpu, "/plugins/gpu.sock")
		s := newSlices()
		m := wipingManager(t, s, e.Dial, 0)
		register(t, m, p)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, s.Calls(), "connected: nothing is deleted")

		p.Stop()
		synctest.Wait()
		stopped := s.since()
		time.Sleep(dra.DefaultWipingDelay - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, s.Calls(), "not before the delay")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []wipe{{gpu, stopped + dra.DefaultWipingDelay}}, s.Calls())
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Len(t, s.Calls(), 1, "once")
		assert.Equal(t, []string{gpu}, m.Registry().Drivers(), "still registered")
	})
}

// "must not be removed if plugin restarts quickly enough": the service
// stops and is back (a new server at the same endpoint) before the delay;
// gRPC reconnects on its own and the wipe is cancelled. When it stops
// again, the delay starts again.
func TestNoWipeWhenThePluginIsBackInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e endpoints
		p := e.start(t, gpu, "/plugins/gpu.sock")
		s := newSlices()
		m := wipingManager(t, s, e.Dial, 0)
		register(t, m, p)
		synctest.Wait()

		p.Stop()
		time.Sleep(5 * time.Second)
		again := e.start(t, gpu, "/plugins/gpu.sock")
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		assert.Empty(t, s.Calls(), "back in time: kept")

		again.Stop()
		synctest.Wait()
		stopped := s.since()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []wipe{{gpu, stopped + dra.DefaultWipingDelay}}, s.Calls(), "gone again: deleted after the delay")
	})
}

// "must be removed after plugin unregistration": the plugin deregisters
// (its service still up); its driver's slices go after the delay
// (Options.WipingDelay here), unless a plugin of the driver registers and
// connects meanwhile.
func TestWipeAfterDeregistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e endpoints
		p := e.start(t, gpu, "/plugins/gpu.sock")
		s := newSlices()
		m := wipingManager(t, s, e.Dial, 10*time.Second)
		register(t, m, p)
		synctest.Wait()

		m.Registry().DeRegisterPlugin(gpu, p.Endpoint())
		time.Sleep(5 * time.Second)
		register(t, m, p)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, s.Calls(), "registered again in time")

		m.Registry().DeRegisterPlugin(gpu, p.Endpoint())
		at := s.since()
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, s.Calls())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []wipe{{gpu, at + 10*time.Second}}, s.Calls())
	})
}

// A driver with two plugins (a rolling update) stays usable while either
// is connected; each driver's wipe is its own.
func TestNoWipeWhileAnotherPluginServes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e endpoints
		old := e.start(t, gpu, "/plugins/gpu-old.sock")
		updated := e.start(t, gpu, "/plugins/gpu-new.sock")
		nic := e.start(t, "nic.example.com", "/plugins/nic.sock")
		s := newSlices()
		m := wipingManager(t, s, e.Dial, 0)
		register(t, m, old, updated, nic)
		synctest.Wait()

		old.Stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, s.Calls(), "the other plugin serves the driver")

		m.Registry().DeRegisterPlugin(gpu, updated.Endpoint())
		at := s.since()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []wipe{{gpu, at + dra.DefaultWipingDelay}}, s.Calls(), "neither: deleted; the other driver's kept")
	})
}

// "must be removed if plugin is unresponsive after registration": a plugin
// that registers but never answers at its endpoint gets its driver's
// slices deleted the delay after it registered.
func TestWipeWhenThePluginNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e endpoints // serves nothing
		s := newSlices()
		m := wipingManager(t, s, e.Dial, 0)
		require.NoError(t, m.Registry().RegisterPlugin(context.Background(), gpu, "/plugins/gpu.sock", dra.Services))
		time.Sleep(dra.DefaultWipingDelay - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, s.Calls())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []wipe{{gpu, dra.DefaultWipingDelay}}, s.Calls())
	})
}

// A deletion that fails is tried again with upstream's back-off: 1 second
// doubling, plus up to 20%, 9 tries in all; an Unauthorized answer (the
// node's credentials not ready yet) too. NotFound counts as done.
func TestWipeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlices()
		s.failWith(func(n int, _ string) error {
			if n%2 == 0 {
				return apierrors.NewUnauthorized("not yet")
			}
			return errors.New("connection refused")
		})
		m := wipingManager(t, s, (&endpoints{}).Dial, 0)
		require.NoError(t, m.Registry().RegisterPlugin(context.Background(), gpu, "/nowhere.sock", dra.Services))
		m.Registry().DeRegisterPlugin(gpu, "/nowhere.sock")
		time.Sleep(time.Hour)
		synctest.Wait()
		calls := s.Calls()
		require.Len(t, calls, 9, "then it gives up, as upstream's")
		assert.Equal(t, dra.DefaultWipingDelay, calls[0].At)
		for i := 1; i < len(calls); i++ {
			wait := time.Second << (i - 1)
			d := calls[i].At - calls[i-1].At
			assert.GreaterOrEqual(t, d, wait, "try %d", i+1)
			assert.LessOrEqual(t, d, wait+wait/5, "try %d", i+1)
		}

		// Gone again: a new wipe, which NotFound ends.
		s.failWith(func(int, string) error { return apierrors.NewNotFound(schema.GroupResource{}, "") })
		require.NoError(t, m.Registry().RegisterPlugin(context.Background(), gpu, "/nowhere.sock", dra.Services))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, s.Calls(), 10)
	})
}

// Close ends a pending wipe and the retries of one under way, and the
// Registry's goroutines with them (the bubble would not end otherwise).
func TestCloseEndsWipes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlices()
		s.failWith(func(int, string) error { return errors.New("connection refused") })
		m, err := dra.New(dra.Options{Slices: s, Dialer: (&endpoints{}).Dial})
		require.NoError(t, err)
		r := m.Registry()
		require.NoError(t, r.RegisterPlugin(context.Background(), gpu, "/gpu.sock", dra.Services))
		time.Sleep(dra.DefaultWipingDelay + 2*time.Second)
		require.NoError(t, r.RegisterPlugin(context.Background(), "nic.example.com", "/nic.sock", dra.Services))
		synctest.Wait()
		require.Len(t, s.Calls(), 2, "retrying")

		r.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, s.Calls(), 2, "neither the retries nor the pending wipe")
	})
}

// WipeAll, which the node runs once at start, deletes every slice of the
// node (driver ""), with the same retries, until the Registry is closed.
func TestWipeAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlices()
		s.failWith(func(n int, _ string) error {
			if n < 3 {
				return errors.New("connection refused")
			}
			return nil
		})
		m := wipingManager(t, s, nil, 0)
		require.NoError(t, m.Registry().WipeAll(context.Background()))
		calls := s.Calls()
		require.Len(t, calls, 3)
		for _, c := range calls {
			assert.Empty(t, c.Driver)
		}
		assert.Equal(t, time.Duration(0), calls[0].At)

		// Failing for good: Close ends it.
		s.failWith(func(int, string) error { return errors.New("connection refused") })
		done := make(chan error)
		go func() { done <- m.Registry().WipeAll(context.Background()) }()
		time.Sleep(10 * time.Second)
		m.Registry().Close()
		assert.ErrorIs(t, <-done, context.Canceled)

		// Without Slices: nothing.
		none, err := dra.New(dra.Options{})
		require.NoError(t, err)
		assert.NoError(t, none.Registry().WipeAll(context.Background()))
		none.Registry().Close()
	})
}

func TestWipingDelayValidated(t *testing.T) {
	_, err := dra.New(dra.Options{WipingDelay: -time.Second})
	assert.ErrorIs(t, err, dra.ErrInvalidOptions)
	assert.EqualError(t, err, "dra: wiping delay -1s: invalid options")
}
