package syncloop_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

func TestNewValidatesOptions(t *testing.T) {
	updates := make(chan syncloop.PodUpdate)
	valid := func() syncloop.Options {
		return syncloop.Options{Handler: newRecordingHandler(), Updates: updates, Pods: syncloop.NewPodSet()}
	}
	tests := []struct {
		name   string
		modify func(*syncloop.Options)
		want   string
	}{
		{"no handler", func(o *syncloop.Options) { o.Handler = nil }, "Handler is required"},
		{"no updates", func(o *syncloop.Options) { o.Updates = nil }, "Updates is required"},
		{"no pods", func(o *syncloop.Options) { o.Pods = nil }, "Pods is required"},
		{"negative sync period", func(o *syncloop.Options) { o.SyncPeriod = -time.Second }, "must not be negative"},
		{"negative housekeeping", func(o *syncloop.Options) { o.HousekeepingPeriod = -time.Second }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.modify(&o)
			_, err := syncloop.New(o)
			require.ErrorIs(t, err, syncloop.ErrInvalidOptions)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err := syncloop.New(valid())
	require.NoError(t, err)
}

func TestConfigUpdatesDispatchByOperation(t *testing.T) {
	tests := []struct {
		op   syncloop.Operation
		want string
	}{
		{syncloop.OpAdd, "Additions a,b"},
		{syncloop.OpUpdate, "Updates a,b"},
		{syncloop.OpRemove, "Removes a,b"},
		{syncloop.OpReconcile, "Reconcile a,b"},
		// A graceful deletion reaches the handler as an update.
		{syncloop.OpDelete, "Updates a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			h := run(t, syncloop.Options{})
			// A SET and an empty update are ignored: the next call the
			// handler sees is the one for tt.op.
			h.send(syncloop.PodUpdate{Op: syncloop.OpSet, Source: "file", Pods: []*v1.Pod{pod("x")}})
			h.send(syncloop.PodUpdate{Op: tt.op, Source: "file"})
			h.send(syncloop.PodUpdate{Op: syncloop.Operation(42), Source: "file", Pods: []*v1.Pod{pod("x")}})
			h.send(syncloop.PodUpdate{Op: tt.op, Source: "file", Pods: []*v1.Pod{pod("a"), pod("b")}})
			assert.Equal(t, tt.want, h.handler.next(t))
		})
	}
}

func TestOperationString(t *testing.T) {
	want := map[syncloop.Operation]string{
		syncloop.OpSet: "SET", syncloop.OpAdd: "ADD", syncloop.OpDelete: "DELETE", syncloop.OpRemove: "REMOVE",
		syncloop.OpUpdate: "UPDATE", syncloop.OpReconcile: "RECONCILE", syncloop.Operation(9): "Operation(9)",
	}
	for op, s := range want {
		assert.Equal(t, s, op.String())
	}
}

func TestClosedUpdatesEndRun(t *testing.T) {
	updates := make(chan syncloop.PodUpdate)
	loop, err := syncloop.New(syncloop.Options{Handler: newRecordingHandler(), Updates: updates, Pods: syncloop.NewPodSet()})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- loop.Run(context.Background()) }()
	close(updates)
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return when Updates closed")
	}
	assert.ErrorContains(t, loop.Run(context.Background()), "more than once")
}

func TestCancelEndsRun(t *testing.T) {
	loop, err := syncloop.New(syncloop.Options{Handler: newRecordingHandler(), Updates: make(chan syncloop.PodUpdate), Pods: syncloop.NewPodSet()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return on cancel")
	}
}

func TestPLEGEventsSyncTheirPod(t *testing.T) {
	events := make(chan pleg.Event)
	h := run(t, syncloop.Options{PLEGEvents: events})
	h.pods.Add(pod("web"))
	feed := func(e pleg.Event) {
		select {
		case events <- e:
		case <-time.After(waitTimeout):
			t.Fatal("loop did not take the event")
		}
	}
	// A removal is not worth a sync and an unknown pod is ignored, so the
	// first call is for the ContainerDied below.
	feed(pleg.Event{PodUID: "uid-web", Type: pleg.ContainerRemoved, ContainerID: "c1"})
	feed(pleg.Event{PodUID: "uid-gone", Type: pleg.ContainerDied, ContainerID: "c2"})
	for _, typ := range []pleg.EventType{pleg.ContainerDied, pleg.ContainerStarted, pleg.PodSync} {
		feed(pleg.Event{PodUID: "uid-web", Type: typ, ContainerID: "c1"})
		assert.Equal(t, "Syncs web", h.handler.next(t), typ.String())
	}
}

// probeStatuses records what the loop writes into statuses.
type probeStatuses struct {
	mu     sync.Mutex
	writes []string
}

func (p *probeStatuses) SetContainerReadiness(uid types.UID, id string, ready bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, fmt.Sprintf("%s/%s ready=%t", uid, id, ready))
}

func (p *probeStatuses) SetContainerStartup(uid types.UID, id string, started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, fmt.Sprintf("%s/%s started=%t", uid, id, started))
}

func (p *probeStatuses) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.writes
	p.writes = nil
	return w
}

func TestProbeResultsSyncTheirPod(t *testing.T) {
	liveness, readiness, startup := make(chan prober.Update), make(chan prober.Update), make(chan prober.Update)
	statuses := &probeStatuses{}
	h := run(t, syncloop.Options{Liveness: liveness, Readiness: readiness, Startup: startup, ProbeStatus: statuses})
	h.pods.Add(pod("web"))
	h.pods.Add(pod("db"))
	feed := func(ch chan prober.Update, uid types.UID, r prober.Result) {
		select {
		case ch <- prober.Update{ContainerID: "c", Result: r, PodUID: uid}:
		case <-time.After(waitTimeout):
			t.Fatal("loop did not take the probe result")
		}
	}
	// Readiness and startup results are written into the status before
	// the sync, for every pod the result names (the status Manager ignores
	// those it does not know).
	tests := []struct {
		name   string
		ch     chan prober.Update
		result prober.Result
		syncs  bool
		writes []string
	}{
		{"liveness success is no news", liveness, prober.Success, false, nil},
		{"liveness failure restarts", liveness, prober.Failure, true, nil},
		{"readiness success", readiness, prober.Success, true, []string{"uid-unknown/c ready=true", "uid-web/c ready=true"}},
		{"readiness failure", readiness, prober.Failure, true, []string{"uid-unknown/c ready=false", "uid-web/c ready=false"}},
		{"startup success", startup, prober.Success, true, []string{"uid-unknown/c started=true", "uid-web/c started=true"}},
		{"startup failure", startup, prober.Failure, true, []string{"uid-unknown/c started=false", "uid-web/c started=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A result for an unknown pod is dropped; the "db" result marks
			// the end so that a missing "web" call is seen.
			feed(tt.ch, "uid-unknown", tt.result)
			feed(tt.ch, "uid-web", tt.result)
			feed(liveness, "uid-db", prober.Failure)
			if tt.syncs {
				assert.Equal(t, "Syncs web", h.handler.next(t))
			}
			assert.Equal(t, "Syncs db", h.handler.next(t))
			assert.Equal(t, tt.writes, statuses.take())
		})
	}
}

func TestSyncTickSyncsPodsWhoseTimeCame(t *testing.T) {
	asked := make(chan time.Time, 10)
	var due []*v1.Pod
	h := run(t, syncloop.Options{PodsToSync: func(now time.Time) []*v1.Pod {
		asked <- now
		return due
	}})
	h.waitTickers()
	start := h.clock.Now()

	// Nothing due: PodsToSync is asked, the handler is not called.
	h.clock.Step(syncloop.DefaultSyncPeriod)
	select {
	case now := <-asked:
		assert.Equal(t, start.Add(time.Second), now)
	case <-time.After(waitTimeout):
		t.Fatal("PodsToSync not called on the tick")
	}
	// A marker through the config channel: had the handler been called on
	// the empty tick, that call would come first.
	h.send(syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: []*v1.Pod{pod("marker")}})
	assert.Equal(t, "Additions marker", h.handler.next(t))
}

func TestSyncTickHandsDuePods(t *testing.T) {
	h := run(t, syncloop.Options{PodsToSync: func(time.Time) []*v1.Pod { return []*v1.Pod{pod("a"), pod("b")} }})
	h.waitTickers()
	h.clock.Step(syncloop.DefaultSyncPeriod)
	assert.Equal(t, "Syncs a,b", h.handler.next(t))
}

func TestHousekeepingWaitsForSources(t *testing.T) {
	ready := make(chan bool, 1)
	ready <- false
	handler := newRecordingHandler()
	handler.cleanupErr = errors.New("runtime unavailable")
	asked := make(chan struct{}, 10)
	h := run(t, syncloop.Options{Handler: handler, SourcesReady: func() bool {
		asked <- struct{}{}
		select {
		case r := <-ready:
			return r
		default:
			return true
		}
	}})
	h.waitTickers()

	// Sources not ready: housekeeping is skipped.
	h.clock.Step(syncloop.DefaultHousekeepingPeriod)
	<-asked
	h.send(syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: []*v1.Pod{pod("marker")}})
	assert.Equal(t, "Additions marker", h.handler.next(t))

	// Ready: cleanups run, and their error does not stop the loop.
	for range 2 {
		h.clock.Step(syncloop.DefaultHousekeepingPeriod)
		assert.Equal(t, "Cleanups", h.handler.next(t))
	}
}

func TestRuntimeErrorsBackOff(t *testing.T) {
	// The runtime is unhealthy for eight checks, then healthy.
	checks := make(chan struct{}, 100)
	unhealthy := 8
	// Long tick periods keep the tickers quiet while the clock moves.
	h := run(t, syncloop.Options{SyncPeriod: time.Hour, HousekeepingPeriod: time.Hour, RuntimeHealthy: func() error {
		checks <- struct{}{}
		if unhealthy > 0 {
			unhealthy--
			return errors.New("container runtime is down")
		}
		return nil
	}})
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, ms := range want {
		select {
		case d := <-h.clock.afters:
			require.Equal(t, ms*time.Millisecond, d, "pause %d", i)
		case <-time.After(waitTimeout):
			t.Fatalf("no pause %d", i)
		}
		<-checks
		h.clock.Step(ms * time.Millisecond)
	}
	// Healthy now: the loop hands out work.
	h.send(syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: []*v1.Pod{pod("a")}})
	assert.Equal(t, "Additions a", h.handler.next(t))
	assert.Empty(t, h.clock.afters, "no pause once healthy")
}

func TestHealthyFailsWhenAnIterationHangs(t *testing.T) {
	handler := newRecordingHandler()
	handler.block = make(chan struct{})
	h := run(t, syncloop.Options{Handler: handler})
	require.Eventually(t, func() bool { return h.loop.Healthy() == nil }, waitTimeout, time.Millisecond)

	h.send(syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: []*v1.Pod{pod("stuck")}})
	assert.Equal(t, "Additions stuck", handler.next(t))
	h.clock.Step(syncloop.DefaultUnhealthyAfter)
	assert.NoError(t, h.loop.Healthy(), "exactly the limit is still healthy")
	h.clock.Step(time.Second)
	assert.ErrorContains(t, h.loop.Healthy(), "sync loop took longer than expected")

	close(handler.block)
	require.Eventually(t, func() bool { return h.loop.Healthy() == nil }, waitTimeout, time.Millisecond)
}

func TestHealthyBeforeRun(t *testing.T) {
	loop, err := syncloop.New(syncloop.Options{Handler: newRecordingHandler(), Updates: make(chan syncloop.PodUpdate), Pods: syncloop.NewPodSet()})
	require.NoError(t, err)
	assert.ErrorContains(t, loop.Healthy(), "has not started")
}
