package pleg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
)

const (
	createdEvent = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	startedEvent = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	stoppedEvent = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	deletedEvent = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// eventedFixture runs an Evented PLEG over a stub runtime inside a synctest
// bubble.
type eventedFixture struct {
	rt      *stubRuntime
	clk     *clocktesting.FakeClock
	m       *recordingMetrics
	logs    *logBuffer
	e       *Evented
	cancel  context.CancelFunc
	done    chan error
	initial []Event
}

func startEvented(t *testing.T, setup func(*stubRuntime), opts EventedOptions) *eventedFixture {
	t.Helper()
	f := &eventedFixture{rt: newStub(), clk: clocktesting.NewFakeClock(t0), m: &recordingMetrics{}, logs: &logBuffer{}}
	if setup != nil {
		setup(f.rt)
	}
	opts.Runtime, opts.Clock, opts.Metrics = f.rt, f.clk, f.m
	opts.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := NewEvented(opts)
	require.NoError(t, err)
	f.e = e
	ctx, cancel := context.WithCancel(t.Context())
	f.cancel, f.done = cancel, make(chan error, 1)
	go func() { f.done <- e.Run(ctx) }()
	f.initial = recvAll(t, e.Events())
	return f
}

func (f *eventedFixture) stop(t *testing.T) {
	t.Helper()
	f.cancel()
	require.NoError(t, <-f.done)
}

// send delivers one event (or a stream error) to the PLEG's open stream.
func (f *eventedFixture) send(t *testing.T, ev *runtimeapi.ContainerEventResponse, err error) {
	t.Helper()
	synctest.Wait()
	select {
	case f.rt.events <- stubEvent{ev: ev, err: err}:
	default:
		t.Fatal("no stream is open")
	}
}

func ns(s int) int64 { return at(s).UnixNano() }

func TestEventedFollowsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, func(rt *stubRuntime) {
			rt.addSandbox("p1", "p1-s", ready)
			rt.addContainer("p1", "p1-s", "p1-c", "main", created)
		}, EventedOptions{})
		defer f.stop(t)
		assert.Equal(t, []Event{{PodUID: "p1", Type: ContainerStarted, ContainerID: "p1-s", Sandbox: true}}, f.initial)
		assert.Equal(t, StreamConnecting, f.e.StreamState())

		// CREATED updates the cache and says nothing.
		f.send(t, f.rt.event("p1-c", createdEvent, ns(1)), nil)
		assert.Empty(t, recvAll(t, f.e.Events()))
		assert.Equal(t, StreamConnected, f.e.StreamState(), "an event proves the stream")
		st, _ := f.e.Cache().Get("p1")
		assert.Equal(t, at(1), st.Timestamp)

		f.rt.setContainerState("p1-c", running)
		f.send(t, f.rt.event("p1-c", startedEvent, ns(2)), nil)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerStarted, ContainerID: "p1-c"}, recv(t, f.e.Events()))
		st, _ = f.e.Cache().Get("p1")
		assert.Equal(t, running, st.ContainerByName("main").GetState())
		assert.Equal(t, []string{"10.0.0.1"}, st.IPs)

		f.rt.setContainerState("p1-c", exited)
		f.send(t, f.rt.event("p1-c", stoppedEvent, ns(3)), nil)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-c"}, recv(t, f.e.Events()))

		ok, err := f.e.Healthy()
		assert.True(t, ok)
		assert.NoError(t, err)
	})
}

// TestEventedOutOfOrderEvents: a late or repeated event never makes a pod
// look older than it is, and a stale event produces no pod event.
func TestEventedOutOfOrderEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, func(rt *stubRuntime) {
			rt.addSandbox("p1", "p1-s", ready)
			rt.addContainer("p1", "p1-s", "p1-c", "main", created)
		}, EventedOptions{})
		defer f.stop(t)
		created := f.rt.event("p1-c", createdEvent, ns(1))
		f.rt.setContainerState("p1-c", running)
		started := f.rt.event("p1-c", startedEvent, ns(2))
		f.rt.setContainerState("p1-c", exited)
		stopped := f.rt.event("p1-c", stoppedEvent, ns(3))

		f.send(t, stopped, nil)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-c"}, recv(t, f.e.Events()))
		f.send(t, started, nil) // late
		f.send(t, created, nil) // later still
		assert.Empty(t, recvAll(t, f.e.Events()), "stale events say nothing")
		st, _ := f.e.Cache().Get("p1")
		assert.Equal(t, exited, st.ContainerByName("main").GetState())
		assert.Equal(t, at(3), st.Timestamp)
		assert.Contains(t, f.logs.String(), "ignoring stale container event")

		// The sandbox goes: the pod is forgotten, and an event from before
		// cannot bring it back.
		deleted := f.rt.event("p1-s", deletedEvent, ns(5))
		f.send(t, deleted, nil)
		assert.Equal(t, []Event{
			{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-s", Sandbox: true},
			{PodUID: "p1", Type: ContainerRemoved, ContainerID: "p1-s", Sandbox: true},
		}, recvAll(t, f.e.Events()))
		f.send(t, stopped, nil) // repeated, from before the deletion
		assert.Empty(t, recvAll(t, f.e.Events()))
		st, _ = f.e.Cache().Get("p1")
		assert.Empty(t, st.Sandboxes)
		assert.Empty(t, st.Containers)

		// An event without a sandbox status is ignored.
		f.send(t, &runtimeapi.ContainerEventResponse{ContainerId: "x", ContainerEventType: startedEvent, CreatedAt: ns(9)}, nil)
		assert.Empty(t, recvAll(t, f.e.Events()))
	})
}

// TestEventedOldSandboxDeleted: removing a pod's old sandbox after a new one
// started does not forget the pod.
func TestEventedOldSandboxDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, func(rt *stubRuntime) {
			rt.addSandbox("p1", "old", notReady)
			rt.addSandbox("p1", "new", ready)
		}, EventedOptions{})
		defer f.stop(t)
		f.send(t, f.rt.event("new", startedEvent, ns(1)), nil)
		recvAll(t, f.e.Events())
		old := f.rt.event("old", deletedEvent, ns(2))
		f.send(t, old, nil)
		recvAll(t, f.e.Events())
		st, _ := f.e.Cache().Get("p1")
		require.NotNil(t, st.Sandbox())
		assert.Equal(t, "new", st.Sandbox().GetId())
	})
}

func TestEventedFallbackAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, func(rt *stubRuntime) { addPod(rt, "p1") }, EventedOptions{})
		defer f.stop(t)
		require.Len(t, f.initial, 2)

		// Four failures: retries at once, then after 1s, 2s, 4s, a relist
		// after each; not yet a fallback. The stream is not open before its
		// wait has passed.
		for i, wait := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second} {
			f.send(t, nil, fmt.Errorf("broken pipe %d", i))
			synctest.Wait()
			assert.NotEqual(t, StreamFallback, f.e.StreamState())
			if wait > 0 {
				f.clk.Step(wait - time.Millisecond)
				synctest.Wait()
				assert.Equal(t, StreamFailed, f.e.StreamState(), "failure %d: still waiting", i)
				f.clk.Step(time.Millisecond)
			}
		}
		// The fifth: fallback, said in the log and the metrics.
		f.send(t, nil, errors.New("broken pipe 4"))
		synctest.Wait()
		assert.Equal(t, StreamFallback, f.e.StreamState())
		assert.Contains(t, f.logs.String(), "falling back to relisting")
		assert.Contains(t, f.m.streamStates(), StreamFallback)
		ok, err := f.e.Healthy()
		assert.True(t, ok, "the forced relist keeps it healthy: %v", err)

		// Relisting every second now.
		f.rt.setContainerState("p1-c", exited)
		f.clk.Step(time.Second)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-c"}, recv(t, f.e.Events()))

		// The health threshold is the generic one while relisting.
		f.rt.setListErr(errors.New("down"))
		f.clk.Step(3*time.Minute + time.Second)
		synctest.Wait()
		ok, err = f.e.Healthy()
		assert.False(t, ok)
		assert.ErrorContains(t, err, "threshold is 3m0s")
		f.rt.setListErr(nil)

		// The stream comes back (the retry wait is 8s, then 16s, 32s, then
		// the one-minute cap; stepping a minute reopens it): once it stays open
		// for a second it counts as connected and events resume.
		f.clk.Step(time.Minute)
		synctest.Wait()
		f.clk.Step(time.Second)
		synctest.Wait()
		assert.Equal(t, StreamConnected, f.e.StreamState())
		assert.Contains(t, f.logs.String(), "stream is back")
		states := f.m.streamStates()
		assert.Equal(t, StreamConnected, states[len(states)-1])
		recvAll(t, f.e.Events())

		// Relisting is the slow safety net again: a change that no event
		// reports is found after 300s, not 1s.
		f.rt.remove("p1-c")
		f.clk.Step(time.Second)
		assert.Empty(t, recvAll(t, f.e.Events()))
		f.clk.Step(300 * time.Second)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerRemoved, ContainerID: "p1-c"}, recv(t, f.e.Events()))
	})
}

func TestEventedUnimplementedFallsBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, nil, EventedOptions{})
		defer f.stop(t)
		f.send(t, nil, fmt.Errorf("get container events: %w", cri.ErrUnimplemented))
		synctest.Wait()
		assert.Equal(t, StreamFallback, f.e.StreamState())
	})
}

// TestEventedRefreshesWaitedOnPods: a pod worker waiting for a status newer
// than its last sync gets one inspected after that time, not one assembled
// from the events seen so far (upstream's CREATED race: the worker started a
// container, the STARTED event is still in flight, and a status showing it
// "created" would make the worker create it again).
func TestEventedRefreshesWaitedOnPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startEvented(t, func(rt *stubRuntime) {
			rt.addSandbox("p1", "p1-s", ready)
			rt.addContainer("p1", "p1-s", "p1-c", "main", created)
		}, EventedOptions{})
		defer f.stop(t)
		f.send(t, f.rt.event("p1-c", createdEvent, f.clk.Now().UnixNano()), nil)
		// The worker starts the container and ends its sync; no STARTED
		// event has arrived.
		f.rt.setContainerState("p1-c", running)
		syncEnd := f.clk.Now()
		got := make(chan *cri.PodStatus, 1)
		go func() {
			st, err := f.e.Cache().GetNewerThan(t.Context(), "p1", syncEnd)
			assert.NoError(t, err)
			got <- st
		}()
		synctest.Wait()
		assert.Empty(t, got, "nothing newer than the sync yet")
		f.clk.Step(DefaultCacheRefreshPeriod)
		synctest.Wait()
		require.Len(t, got, 1)
		st := <-got
		assert.Equal(t, running, st.ContainerByName("main").GetState())
		assert.True(t, st.Timestamp.After(syncEnd))
	})
}

func TestNewEventedOptions(t *testing.T) {
	rt := newStub()
	tests := []struct {
		name    string
		opts    EventedOptions
		wantErr string
	}{
		{name: "zero value but the runtime: upstream's defaults", opts: EventedOptions{Runtime: rt}},
		{name: "no runtime", wantErr: "runtime is required"},
		{name: "negative max failures", opts: EventedOptions{Runtime: rt, MaxStreamFailures: -1}, wantErr: "max stream failures is negative"},
		{name: "negative refresh period", opts: EventedOptions{Runtime: rt, CacheRefreshPeriod: -time.Second}, wantErr: "cache refresh period is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEvented(tt.opts)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidOptions)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 300*time.Second, e.relistPeriod)
			assert.Equal(t, 10*time.Minute, e.relistThreshold)
			assert.Equal(t, time.Second, e.fallbackPeriod)
			assert.Equal(t, 3*time.Minute, e.fallbackThreshold)
			assert.Equal(t, 5, e.maxFailures)
			assert.Equal(t, 2*time.Second, e.refreshPeriod)
			assert.Equal(t, 8, e.parallelism)
			assert.NotNil(t, e.Cache())
		})
	}
}

// With OnEvents, the consumer gets the events of the stream and of relists
// after the cache holds the status they describe (or has forgotten the
// pod), as a consumer of the channel does, and even as the stream falls
// back to relisting.
func TestEventedOnEventsAfterTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handedOver{cache: NewCache()}
		f := startEvented(t, func(rt *stubRuntime) {
			rt.addSandbox("p1", "p1-s", ready)
			rt.addContainer("p1", "p1-s", "p1-c", "main", created)
			addPod(rt, "p2")
		}, EventedOptions{Cache: h.cache, OnEvents: h.onEvents})
		defer f.stop(t)
		f.clk.Step(DefaultRelistPeriod) // the stream counts as connected, and a relist follows
		synctest.Wait()
		require.Equal(t, StreamConnected, f.e.StreamState())
		assert.Equal(t, []string{"p1 ContainerStarted p1-s (sandbox)", "p2 ContainerStarted p2-c", "p2 ContainerStarted p2-s (sandbox)"}, h.take())

		// The stream's events. The runtime reports a removal with what is
		// left of the pod.
		f.rt.setContainerState("p1-c", running)
		f.send(t, f.rt.event("p1-c", startedEvent, ns(2)), nil)
		f.rt.setContainerState("p1-c", exited)
		f.send(t, f.rt.event("p1-c", stoppedEvent, ns(3)), nil)
		deleted := f.rt.event("p1-c", deletedEvent, ns(4))
		deleted.ContainersStatuses = nil
		f.rt.remove("p1-c")
		f.send(t, deleted, nil)
		f.rt.setSandboxState("p1-s", notReady)
		deleted = f.rt.event("p1-s", deletedEvent, ns(5))
		f.rt.remove("p1-s")
		f.send(t, deleted, nil)
		synctest.Wait()
		assert.Equal(t, []string{
			"p1 ContainerStarted p1-c",
			"p1 ContainerDied p1-c",
			"p1 ContainerDied p1-c", "p1 ContainerRemoved p1-c",
			"p1 ContainerDied p1-s (sandbox)", "p1 ContainerRemoved p1-s (sandbox)",
		}, h.take())

		// The stream is gone for good: the relist at once, then one every
		// second, find what happens.
		f.send(t, nil, fmt.Errorf("get container events: %w", cri.ErrUnimplemented))
		synctest.Wait()
		require.Equal(t, StreamFallback, f.e.StreamState())
		assert.Equal(t, []string{
			"p1 ContainerDied p1-c", "p1 ContainerRemoved p1-c",
			"p1 ContainerDied p1-s (sandbox)", "p1 ContainerRemoved p1-s (sandbox)",
		}, h.take(), "the relist repeats what the stream reported")
		f.rt.setContainerState("p2-c", exited)
		f.clk.Step(DefaultRelistPeriod)
		synctest.Wait()
		assert.Equal(t, []string{"p2 ContainerDied p2-c"}, h.take())
	})
}
