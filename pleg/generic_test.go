package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
)

const (
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	created  = runtimeapi.ContainerState_CONTAINER_CREATED
	running  = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited   = runtimeapi.ContainerState_CONTAINER_EXITED
)

// addPod adds a pod with a ready sandbox "<uid>-s" and one running container
// "<uid>-c".
func addPod(rt *stubRuntime, uid types.UID) {
	rt.addSandbox(uid, string(uid)+"-s", ready)
	rt.addContainer(uid, string(uid)+"-s", string(uid)+"-c", "main", running)
}

func TestNewGenericOptions(t *testing.T) {
	rt := newStub()
	tests := []struct {
		name    string
		opts    GenericOptions
		wantErr string
	}{
		{name: "zero value but the runtime: defaults", opts: GenericOptions{Runtime: rt}},
		{name: "no runtime", opts: GenericOptions{}, wantErr: "runtime is required"},
		{name: "negative period", opts: GenericOptions{Runtime: rt, RelistPeriod: -1}, wantErr: "relist period is negative"},
		{name: "negative parallelism", opts: GenericOptions{Runtime: rt, Parallelism: -2}, wantErr: "parallelism is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGeneric(tt.opts)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidOptions)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, DefaultRelistPeriod, g.period)
			assert.Equal(t, DefaultRelistThreshold, g.threshold)
			assert.Equal(t, DefaultParallelism, g.r.parallelism)
			assert.Equal(t, DefaultRuntimeTimeout, g.r.timeout)
			assert.NotNil(t, g.Cache())
		})
	}
}

// recv returns the next event, failing the test if none is ready once every
// goroutine has settled.
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	synctest.Wait()
	select {
	case e, ok := <-ch:
		require.True(t, ok, "events channel closed")
		return e
	default:
		t.Fatal("no event ready")
		return Event{}
	}
}

// recvAll takes every event that is ready.
func recvAll(t *testing.T, ch <-chan Event) []Event {
	t.Helper()
	var out []Event
	for {
		synctest.Wait()
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestGenericRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newStub()
		addPod(rt, "p1")
		clk := clocktesting.NewFakeClock(t0)
		m := &recordingMetrics{}
		g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clk, Metrics: m})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()

		// The first relist runs at once.
		assert.ElementsMatch(t, []Event{
			{PodUID: "p1", Type: ContainerStarted, ContainerID: "p1-c"},
			{PodUID: "p1", Type: ContainerStarted, ContainerID: "p1-s", Sandbox: true},
		}, recvAll(t, g.Events()))
		st, err := g.Cache().Get("p1")
		require.NoError(t, err)
		assert.Equal(t, t0, st.Timestamp)
		assert.Equal(t, []string{"10.0.0.1"}, st.IPs)
		assert.Equal(t, "name-p1", st.Name)
		assert.Equal(t, t0, g.Cache().Time())

		// The container exits; the next relist, a period later, reports it.
		rt.setContainerState("p1-c", exited)
		clk.Step(time.Second - time.Nanosecond)
		assert.Empty(t, recvAll(t, g.Events()), "not before the period is up")
		clk.Step(time.Nanosecond)
		assert.Equal(t, Event{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-c"}, recv(t, g.Events()))
		st, _ = g.Cache().Get("p1")
		assert.Equal(t, exited, st.ContainerByName("main").GetState())
		assert.Equal(t, t0.Add(time.Second), g.Cache().Time())
		ok, err := g.Healthy()
		assert.True(t, ok)
		assert.NoError(t, err)

		cancel()
		require.NoError(t, <-done)
		_, open := <-g.Events()
		assert.False(t, open, "Events is closed when Run returns")
		assert.ErrorContains(t, g.Run(t.Context()), "more than once")
		m.mu.Lock()
		assert.Len(t, m.durations, 2)
		assert.Equal(t, []time.Duration{time.Second}, m.intervals)
		assert.Equal(t, t0.Add(time.Second), m.lastSeen)
		m.mu.Unlock()
	})
}

func TestGenericHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newStub()
		addPod(rt, "p1")
		clk := clocktesting.NewFakeClock(t0)
		m := &recordingMetrics{}
		g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clk, Metrics: m, RuntimeTimeout: time.Hour})
		require.NoError(t, err)

		ok, err := g.Healthy()
		assert.False(t, ok)
		assert.EqualError(t, err, "pleg has yet to be successful")

		require.NoError(t, g.Relist(t.Context()))
		clk.Step(3 * time.Minute)
		ok, err = g.Healthy()
		assert.True(t, ok, "exactly at the threshold is still healthy")
		assert.NoError(t, err)

		// A failing relist does not count.
		rt.setListErr(errors.New("runtime down"))
		assert.ErrorContains(t, g.Relist(t.Context()), "relist: runtime down")
		clk.Step(time.Second)
		ok, err = g.Healthy()
		assert.False(t, ok)
		assert.EqualError(t, err, "pleg was last seen active 3m1s ago; threshold is 3m0s")
		rt.setListErr(nil)

		// A relist that hangs in the runtime does not hide its age.
		rt.setHang("list", true)
		go func() { _ = g.Relist(t.Context()) }()
		synctest.Wait()
		require.EqualValues(t, 1, rt.hung.Load())
		clk.Step(2 * time.Minute)
		ok, err = g.Healthy()
		assert.False(t, ok)
		assert.EqualError(t, err, "pleg was last seen active 5m1s ago; threshold is 3m0s; a relist has been running for 2m0s")
		m.mu.Lock()
		assert.Equal(t, t0, m.lastSeen, "the health check reports the last-seen time while the relist hangs")
		m.mu.Unlock()
		rt.setHang("list", false)
		clk.Step(time.Hour) // the runtime timeout ends the hung relist
		synctest.Wait()
		require.NoError(t, g.Relist(t.Context()))
		ok, _ = g.Healthy()
		assert.True(t, ok)
	})
}

// TestGenericHungInspection: an inspection that hangs holds up neither the
// other pods' events nor, past the runtime timeout, the relist; the pod is
// retried on the next relist.
func TestGenericHungInspection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newStub()
		for _, p := range []types.UID{"p1", "p2", "p3", "p4"} {
			addPod(rt, p)
		}
		rt.setHang("p2-c", true)
		clk := clocktesting.NewFakeClock(t0)
		g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clk, Parallelism: 2, RuntimeTimeout: 30 * time.Second})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()

		evs := recvAll(t, g.Events())
		assert.Len(t, evs, 6, "p1, p3 and p4 are delivered while p2 hangs")
		for _, e := range evs {
			assert.NotEqual(t, types.UID("p2"), e.PodUID)
		}
		assert.EqualValues(t, 1, rt.hung.Load())
		assert.True(t, g.Cache().Time().IsZero(), "the relist has not finished")

		clk.Step(30 * time.Second) // the inspection times out
		synctest.Wait()
		_, err = g.Cache().Get("p2")
		assert.ErrorIs(t, err, errRuntimeTimeout, "waiters on p2 see why")
		assert.Equal(t, t0, g.Cache().Time(), "the relist finished")

		rt.setHang("p2-c", false)
		clk.Step(time.Second)
		assert.ElementsMatch(t, []Event{
			{PodUID: "p2", Type: ContainerStarted, ContainerID: "p2-c"},
			{PodUID: "p2", Type: ContainerStarted, ContainerID: "p2-s", Sandbox: true},
		}, recvAll(t, g.Events()), "the retry delivers p2's events")
		st, err := g.Cache().Get("p2")
		require.NoError(t, err)
		assert.Len(t, st.Containers, 1)
		cancel()
		require.NoError(t, <-done)
	})
}

// TestGenericParallelism: a relist never has more than Parallelism
// inspections in flight.
func TestGenericParallelism(t *testing.T) {
	for _, par := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("parallelism=", par), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := newStub()
				for i := range 10 {
					uid := types.UID(fmt.Sprintf("p%d", i))
					addPod(rt, uid)
					rt.setHang(string(uid)+"-s", true)
				}
				clk := clocktesting.NewFakeClock(t0)
				g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clk, Parallelism: par, RuntimeTimeout: time.Second})
				require.NoError(t, err)
				var wg sync.WaitGroup
				wg.Go(func() { _ = g.Relist(t.Context()) })
				inspected := 0
				for inspected < 10 {
					synctest.Wait()
					n := int(rt.hung.Load())
					require.Equal(t, min(par, 10-inspected), n)
					inspected += n
					clk.Step(time.Second)
				}
				wg.Wait()
				assert.Len(t, g.r.reinspect, 10)
			})
		})
	}
}

func TestGenericSkipsContainersRemovedDuringInspection(t *testing.T) {
	rt := newStub()
	addPod(rt, "p1")
	rt.addContainer("p1", "p1-s", "p1-c2", "side", running)
	g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	// The container is listed, then gone when its status is asked for.
	rt.setStatusErr("p1-c2", fmt.Errorf("gone: %w", cri.ErrNotFound))
	require.NoError(t, g.Relist(t.Context()))
	st, err := g.Cache().Get("p1")
	require.NoError(t, err)
	assert.Len(t, st.Containers, 1)
	assert.Empty(t, g.r.reinspect)
}

// With OnEvents, a pod's events of a relist reach the consumer all in one
// call, after the cache holds the status they describe (or has forgotten
// the pod), and the channel stays silent.
func TestGenericOnEvents(t *testing.T) {
	rt := newStub()
	cache := NewCache()
	h := &handedOver{cache: cache}
	var calls [][]Event
	g, err := NewGeneric(GenericOptions{Runtime: rt, Cache: cache, OnEvents: func(events []Event) {
		calls = append(calls, events)
		h.onEvents(events)
	}})
	require.NoError(t, err)
	require.NoError(t, g.Relist(context.Background()))
	addPod(rt, "a")
	require.NoError(t, g.Relist(context.Background()))

	require.Len(t, calls, 1)
	assert.ElementsMatch(t, []Event{
		{PodUID: "a", Type: ContainerStarted, ContainerID: "a-s", Sandbox: true},
		{PodUID: "a", Type: ContainerStarted, ContainerID: "a-c"},
	}, calls[0])
	assert.Equal(t, []string{"a ContainerStarted a-c", "a ContainerStarted a-s (sandbox)"}, h.take())

	rt.setContainerState("a-c", exited)
	require.NoError(t, g.Relist(context.Background()))
	assert.Equal(t, []string{"a ContainerDied a-c"}, h.take())

	rt.remove("a-c")
	rt.remove("a-s")
	require.NoError(t, g.Relist(context.Background()))
	assert.Equal(t, []string{"a ContainerRemoved a-c", "a ContainerDied a-s (sandbox)", "a ContainerRemoved a-s (sandbox)"}, h.take())
	select {
	case ev := <-g.Events():
		t.Fatalf("the channel got %v", ev)
	default:
	}
}
