package pleg_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
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
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/pleg"
)

// The scenarios run a PLEG against the in-memory runtime of cri/fake, driven
// by fake clocks, inside a synctest bubble: synctest.Wait returns once every
// goroutine is parked, so a test steps the clocks only when the PLEG waits on
// them, and checks what was delivered without sleeping.
//
// The runtime and the PLEG get two fake clocks, stepped in turn by the same
// amount, so that a test decides separately when the runtime's timers
// (latency, scripted behaviour) fire and when the PLEG's do. Containers exit
// by StopContainer, so that each scenario says exactly when they exit.

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The CRI client's interface and the fake satisfy what the PLEGs need.
var (
	_ pleg.EventedRuntime = cri.RuntimeService(nil)
	_ pleg.EventedRuntime = (*fake.Runtime)(nil)
)

// node is a fake runtime with pods that a kubelet would have created: labels
// on every sandbox and container. Containers run until stopped.
type node struct {
	t     *testing.T
	clk   *clocktesting.FakeClock // the PLEG's
	rtClk *clocktesting.FakeClock // the runtime's
	rt    *fake.Runtime
}

func newNode(t *testing.T) *node {
	t.Helper()
	clk, rtClk := clocktesting.NewFakeClock(start), clocktesting.NewFakeClock(start)
	rt := fake.New(fake.Options{Clock: rtClk, Images: []string{"busybox"}})
	t.Cleanup(rt.Close)
	return &node{t: t, clk: clk, rtClk: rtClk, rt: rt}
}

func sandboxConfig(uid types.UID) *runtimeapi.PodSandboxConfig {
	name := "pod-" + string(uid)
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: string(uid)},
		Labels:   cri.PodLabels(uid, name, "default"),
	}
}

// runPod starts a sandbox and the named containers, as a pod sync would.
func (n *node) runPod(uid types.UID, containers ...string) string {
	n.t.Helper()
	ctx := context.Background()
	sb, err := n.rt.RunPodSandbox(ctx, sandboxConfig(uid), "")
	require.NoError(n.t, err)
	for _, c := range containers {
		n.startContainer(uid, sb, c)
	}
	return sb
}

func (n *node) startContainer(uid types.UID, sandboxID, name string) string {
	n.t.Helper()
	ctx := context.Background()
	cfg := sandboxConfig(uid)
	id, err := n.rt.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{name},
		Labels:   cri.ContainerLabels(uid, cfg.Metadata.Name, "default", name),
	}, cfg)
	require.NoError(n.t, err)
	require.NoError(n.t, n.rt.StartContainer(ctx, id))
	return id
}

// step moves both clocks, the runtime's first, each once everything is
// parked.
func (n *node) step(d time.Duration) {
	synctest.Wait()
	n.rtClk.Step(d)
	synctest.Wait()
	n.clk.Step(d)
	synctest.Wait()
}

// running is a PLEG under test and what it delivered.
type running struct {
	events <-chan pleg.Event
	cancel context.CancelFunc
	done   chan error
}

func run(t *testing.T, p interface {
	Run(context.Context) error
	Events() <-chan pleg.Event
}) *running {
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{events: p.Events(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		assert.NoError(t, <-r.done)
	})
	return r
}

// take returns every event ready now, in delivery order.
func (r *running) take() []pleg.Event {
	var out []pleg.Event
	for {
		synctest.Wait()
		select {
		case e := <-r.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// describe renders events with the IDs replaced by what they are.
func describe(evs []pleg.Event, names map[string]string) []string {
	var out []string
	for _, e := range evs {
		id := names[e.ContainerID]
		if id == "" {
			id = e.ContainerID
		}
		out = append(out, fmt.Sprintf("%s %s %s", e.PodUID, e.Type, id))
	}
	slices.Sort(out) // pods and objects in any order; a pod's own order is checked where it matters
	return out
}

func TestScenarioContainerLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		g, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: n.rt, Clock: n.clk})
		require.NoError(t, err)
		r := run(t, g)
		assert.Empty(t, r.take(), "an empty node")

		sb := n.runPod("u1")
		app := n.startContainer("u1", sb, "app")
		crash := n.startContainer("u1", sb, "crash")
		names := map[string]string{sb: "sandbox", app: "app", crash: "crash"}

		n.step(time.Second)
		assert.Equal(t, []string{
			"u1 ContainerStarted app",
			"u1 ContainerStarted crash",
			"u1 ContainerStarted sandbox",
		}, describe(r.take(), names))
		st, err := g.Cache().Get("u1")
		require.NoError(t, err)
		assert.Equal(t, "pod-u1", st.Name)
		assert.Len(t, st.IPs, 1, "the fake gives the sandbox an IP")

		// A container exits; the next relist reports it, with its exit
		// code in the cache.
		require.NoError(t, n.rt.StopContainer(t.Context(), crash, 30))
		n.step(time.Second)
		assert.Equal(t, []string{"u1 ContainerDied crash"}, describe(r.take(), names))
		st, _ = g.Cache().Get("u1")
		c := st.ContainerByName("crash")
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, c.GetState())
		assert.EqualValues(t, 143, c.GetExitCode())

		// Removal of the exited container.
		require.NoError(t, n.rt.RemoveContainer(t.Context(), crash))
		n.step(time.Second)
		assert.Equal(t, []string{"u1 ContainerRemoved crash"}, describe(r.take(), names))

		// The sandbox dies: its container dies with it.
		require.NoError(t, n.rt.StopPodSandbox(t.Context(), sb))
		n.step(time.Second)
		assert.Equal(t, []string{"u1 ContainerDied app", "u1 ContainerDied sandbox"}, describe(r.take(), names))
		st, _ = g.Cache().Get("u1")
		assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, st.Sandbox().GetState())
		assert.Len(t, st.IPs, 1, "a dead pod keeps reporting the IP it had")

		// The pod is removed: the cache forgets it.
		require.NoError(t, n.rt.RemovePodSandbox(t.Context(), sb))
		n.step(time.Second)
		assert.Equal(t, []string{"u1 ContainerRemoved app", "u1 ContainerRemoved sandbox"}, describe(r.take(), names))
		st, err = g.Cache().Get("u1")
		require.NoError(t, err)
		assert.Empty(t, st.Sandboxes)
		assert.Empty(t, st.Containers)
	})
}

// TestScenarioPodWorkerWaits: a pod worker waiting for a status newer than its
// last sync is released by the next relist with the state it caused.
func TestScenarioPodWorkerWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		g, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: n.rt, Clock: n.clk})
		require.NoError(t, err)
		run(t, g)
		synctest.Wait()

		sb := n.runPod("u1")
		n.startContainer("u1", sb, "app")
		lastSync := n.clk.Now()
		got := make(chan *cri.PodStatus, 1)
		go func() {
			st, err := g.Cache().GetNewerThan(t.Context(), "u1", lastSync)
			assert.NoError(t, err)
			got <- st
		}()
		synctest.Wait()
		assert.Empty(t, got)
		n.step(time.Second)
		require.Len(t, got, 1)
		st := <-got
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("app").GetState())
	})
}

func TestScenarioRuntimeErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		sb := n.runPod("u1", "app")
		logs := &syncBuffer{}
		g, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: n.rt, Clock: n.clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		r := run(t, g)
		assert.Len(t, r.take(), 2)

		// Listing fails for a while: no events, and after the threshold the
		// PLEG is unhealthy with upstream's message.
		n.rt.InjectFault(fake.ListContainers, fake.Fault{Err: fmt.Errorf("connection refused: %w", cri.ErrUnavailable)})
		app2 := n.startContainer("u1", sb, "app2")
		for range 181 {
			n.step(time.Second)
		}
		assert.Empty(t, r.take())
		ok, err := g.Healthy()
		assert.False(t, ok)
		assert.EqualError(t, err, "pleg was last seen active 3m1s ago; threshold is 3m0s")
		assert.Contains(t, logs.String(), "connection refused")

		// The runtime recovers; one inspection call fails once: the pod's
		// events wait for the retry, and its cache entry says why meanwhile.
		n.rt.ClearFault()
		n.rt.InjectFault(fake.ContainerStatus, fake.Fault{Err: errors.New("transient"), Times: 1})
		n.step(time.Second)
		assert.Empty(t, r.take())
		_, err = g.Cache().Get("u1")
		assert.ErrorContains(t, err, "transient")
		ok, _ = g.Healthy()
		assert.True(t, ok, "a relist whose listing worked counts")
		n.step(time.Second)
		assert.Equal(t, []pleg.Event{{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: app2}}, r.take())
		_, err = g.Cache().Get("u1")
		assert.NoError(t, err)
	})
}

// TestScenarioHungInspection: an inspection that hangs in the runtime holds
// up the relist (not the other pods' events) until RuntimeTimeout, and the
// health check shows the relist's age meanwhile.
func TestScenarioHungInspection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		g, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: n.rt, Clock: n.clk, RuntimeTimeout: 4 * time.Minute})
		require.NoError(t, err)
		r := run(t, g)
		synctest.Wait()

		n.runPod("u1", "app")
		n.rt.InjectFault(fake.ContainerStatus, fake.Fault{Hang: true, Times: 1})
		n.runPod("u2", "app")
		n.step(time.Second)
		evs := r.take()
		pods := map[types.UID]int{}
		for _, e := range evs {
			pods[e.PodUID]++
		}
		assert.Len(t, pods, 1, "the pod whose inspection did not hang is delivered: %v", evs)

		n.step(3*time.Minute + time.Second)
		ok, err := g.Healthy()
		assert.False(t, ok)
		assert.EqualError(t, err, "pleg was last seen active 3m2s ago; threshold is 3m0s; a relist has been running for 3m1s")

		n.step(time.Minute) // the timeout ends the hung call
		n.step(time.Second) // the retry
		evs = append(evs, r.take()...)
		assert.Len(t, evs, 4, "both pods' sandboxes and containers")
		ok, _ = g.Healthy()
		assert.True(t, ok)
	})
}

// TestScenarioSlowConsumer: a consumer that reads nothing for many relists
// loses nothing: for every pod it gets the events in order or, once too many
// piled up, a PodSync, and the cache holds the pod's final state.
func TestScenarioSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		m := &countingMetrics{}
		g, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: n.rt, Clock: n.clk, Metrics: m})
		require.NoError(t, err)
		r := run(t, g)
		synctest.Wait()

		const pods, rounds = 20, 8
		sandboxes := map[types.UID]string{}
		for p := range pods {
			uid := types.UID(fmt.Sprintf("u%02d", p))
			sandboxes[uid] = n.runPod(uid)
		}
		n.step(time.Second)
		// Each round every pod starts a container that then exits and is
		// removed: three events per pod per round, 24 in all, more than a
		// pod may hold pending.
		for range rounds {
			ids := map[types.UID]string{}
			for uid, sb := range sandboxes {
				ids[uid] = n.startContainer(uid, sb, "job")
			}
			n.step(time.Second) // started
			for _, id := range ids {
				require.NoError(t, n.rt.StopContainer(t.Context(), id, 0))
			}
			n.step(time.Second) // died
			for _, id := range ids {
				require.NoError(t, n.rt.RemoveContainer(t.Context(), id))
			}
			n.step(time.Second) // removed
		}
		// Only now does the consumer read.
		byPod := map[types.UID][]pleg.Event{}
		for _, e := range r.take() {
			byPod[e.PodUID] = append(byPod[e.PodUID], e)
		}
		require.Len(t, byPod, pods)
		for uid, evs := range byPod {
			last := evs[len(evs)-1]
			assert.Equal(t, pleg.PodSync, last.Type, "pod %s ends with a PodSync covering what was coalesced", uid)
			st, err := g.Cache().Get(uid)
			require.NoError(t, err)
			assert.Empty(t, st.Containers, "pod %s: the cache holds the final state", uid)
			assert.Len(t, st.Sandboxes, 1)
		}
		assert.Positive(t, m.coalesced())

		// A consumer that keeps up gets events as themselves again.
		sb := sandboxes["u00"]
		id := n.startContainer("u00", sb, "app")
		n.step(time.Second)
		assert.Equal(t, []pleg.Event{{PodUID: "u00", Type: pleg.ContainerStarted, ContainerID: id}}, r.take())
	})
}

// breakable wraps the fake runtime so that a test can break the event stream
// that is open, as a runtime restart would.
type breakable struct {
	*fake.Runtime
	mu    sync.Mutex
	brk   context.CancelFunc
	count int // streams opened
}

func (b *breakable) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		b.mu.Lock()
		b.brk = cancel
		b.count++
		b.mu.Unlock()
		for ev, err := range b.Runtime.GetContainerEvents(sctx) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
		if ctx.Err() == nil {
			yield(nil, fmt.Errorf("stream broken: %w", cri.ErrUnavailable))
		}
	}
}

func (b *breakable) breakStream() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.brk()
}

func (b *breakable) streams() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

func TestScenarioEventedStreamFailureAndFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		rt := &breakable{Runtime: n.rt}
		logs := &syncBuffer{}
		m := &countingMetrics{}
		e, err := pleg.NewEvented(pleg.EventedOptions{Runtime: rt, Clock: n.clk, Metrics: m, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		r := run(t, e)
		n.step(time.Second) // a stream open for a second counts as connected
		assert.Equal(t, pleg.StreamConnected, e.StreamState())

		// Events flow without the clock moving: no relist is needed.
		sb := n.runPod("u1")
		app := n.startContainer("u1", sb, "app")
		assert.Equal(t, []pleg.Event{
			{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: sb, Sandbox: true},
			{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: app},
		}, r.take(), "the runtime reports the sandbox's start too, as containerd 1.7")
		assert.Equal(t, pleg.StreamConnected, e.StreamState())
		st, err := e.Cache().Get("u1")
		require.NoError(t, err)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("app").GetState())

		// The runtime restarts and keeps refusing the stream: five failures
		// (the first retried at once, then after 1s, 2s and 4s), a relist
		// after each, then the fallback.
		n.rt.InjectFault(fake.GetContainerEvents, fake.Fault{Err: fmt.Errorf("restarting: %w", cri.ErrUnavailable)})
		rt.breakStream()
		for _, wait := range []time.Duration{1, 2, 4} {
			synctest.Wait()
			assert.NotEqual(t, pleg.StreamFallback, e.StreamState())
			n.step(wait * time.Second)
		}
		assert.Equal(t, pleg.StreamFallback, e.StreamState())
		assert.Contains(t, logs.String(), "falling back to relisting")
		assert.Equal(t, 1, m.count(pleg.StreamFallback))
		assert.Equal(t, 5, m.count(pleg.StreamFailed))

		// While it falls back, a relist every second finds what happens.
		// (The relists also repeat what the stream delivered before: the
		// relist compares with what relists saw, and a consumer syncs the
		// same pod twice at worst.)
		r.take()
		app2 := n.startContainer("u1", sb, "app2")
		n.step(time.Second)
		assert.Equal(t, []pleg.Event{{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: app2}}, r.take())

		// The stream is back: the next attempt (8s after the last failure)
		// opens it, a second later it counts as connected, and events flow
		// again.
		n.rt.ClearFault(fake.GetContainerEvents)
		opened := rt.streams()
		for rt.streams() == opened {
			n.step(time.Second)
		}
		n.step(time.Second)
		assert.Equal(t, pleg.StreamConnected, e.StreamState())
		assert.Contains(t, logs.String(), "stream is back")
		r.take()
		app3 := n.startContainer("u1", sb, "app3")
		assert.Equal(t, []pleg.Event{{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: app3}}, r.take())
		ok, err := e.Healthy()
		assert.True(t, ok, "%v", err)
	})
}

// reordering wraps the fake runtime's event stream: it holds each CREATED
// event back and delivers it after the next event, and delivers every STOPPED
// event twice.
type reordering struct{ *fake.Runtime }

func (o reordering) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		var held *runtimeapi.ContainerEventResponse
		for ev, err := range o.Runtime.GetContainerEvents(ctx) {
			if err != nil {
				yield(nil, err)
				return
			}
			if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT && held == nil {
				held = ev
				continue
			}
			if !yield(ev, nil) {
				return
			}
			if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT && !yield(ev, nil) {
				return
			}
			if held != nil {
				if !yield(held, nil) {
					return
				}
				held = nil
			}
		}
	}
}

func TestScenarioEventedOutOfOrderEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNode(t)
		logs := &syncBuffer{}
		e, err := pleg.NewEvented(pleg.EventedOptions{Runtime: reordering{n.rt}, Clock: n.clk,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		require.NoError(t, err)
		r := run(t, e)
		n.step(time.Second) // connected

		// Each step on its own instant: the fake stamps events with its
		// clock, and the cache orders statuses by time.
		sb := n.runPod("u1")
		assert.Equal(t, []pleg.Event{{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: sb, Sandbox: true}}, r.take())
		ctx := t.Context()
		cfg := sandboxConfig("u1")
		id, err := n.rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Command: []string{"app"}, Labels: cri.ContainerLabels("u1", cfg.Metadata.Name, "default", "app"),
		}, cfg)
		require.NoError(t, err)
		n.step(time.Millisecond)
		require.NoError(t, n.rt.StartContainer(ctx, id))

		// STARTED arrived first; the late CREATED is refused.
		assert.Equal(t, []pleg.Event{{PodUID: "u1", Type: pleg.ContainerStarted, ContainerID: id}}, r.take())
		st, _ := e.Cache().Get("u1")
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByID(id).GetState(), "not made older by the late CREATED")
		assert.Contains(t, logs.String(), "ignoring stale container event")

		// The container exits; its STOPPED event comes twice.
		n.step(time.Millisecond)
		require.NoError(t, n.rt.StopContainer(ctx, id, 0))
		evs := r.take()
		assert.Equal(t, pleg.Event{PodUID: "u1", Type: pleg.ContainerDied, ContainerID: id}, evs[0])
		for _, ev := range evs[1:] {
			assert.Equal(t, evs[0], ev, "the repeat says the same, if anything")
		}
		st, _ = e.Cache().Get("u1")
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.ContainerByID(id).GetState())
		assert.EqualValues(t, 137, st.ContainerByID(id).GetExitCode(), "killed")
	})
}

// syncBuffer collects logs across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingMetrics counts what the PLEG reports.
type countingMetrics struct {
	mu        sync.Mutex
	coalesce  int
	states    map[pleg.StreamState]int
	durations int
}

var _ pleg.Metrics = (*countingMetrics)(nil)

func (m *countingMetrics) RelistDuration(time.Duration) { m.mu.Lock(); m.durations++; m.mu.Unlock() }
func (m *countingMetrics) RelistInterval(time.Duration) {}
func (m *countingMetrics) LastSeen(time.Time)           {}
func (m *countingMetrics) EventsCoalesced(n int)        { m.mu.Lock(); m.coalesce += n; m.mu.Unlock() }
func (m *countingMetrics) StreamState(s pleg.StreamState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states == nil {
		m.states = map[pleg.StreamState]int{}
	}
	m.states[s]++
}

func (m *countingMetrics) coalesced() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coalesce
}

func (m *countingMetrics) count(s pleg.StreamState) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[s]
}
