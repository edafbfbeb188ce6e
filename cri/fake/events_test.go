package fake_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// stream pulls events one by one from a GetContainerEvents sequence.
type stream struct {
	next func() (*runtimeapi.ContainerEventResponse, error, bool)
	stop func()
}

func follow(t *testing.T, seq iter.Seq2[*runtimeapi.ContainerEventResponse, error]) *stream {
	next, stop := iter.Pull2(seq)
	t.Cleanup(stop)
	return &stream{next: next, stop: stop}
}

// take returns the next n events, failing on an error or the end.
func (s *stream) take(t *testing.T, n int) []*runtimeapi.ContainerEventResponse {
	t.Helper()
	var out []*runtimeapi.ContainerEventResponse
	for range n {
		ev, err, ok := s.next()
		require.True(t, ok, "the stream ended")
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

type eventSummary struct {
	id      string
	typ     runtimeapi.ContainerEventType
	at      int64
	sandbox runtimeapi.PodSandboxState
	states  map[string]runtimeapi.ContainerState
}

func summarize(evs []*runtimeapi.ContainerEventResponse) []eventSummary {
	var out []eventSummary
	for _, ev := range evs {
		s := eventSummary{id: ev.ContainerId, typ: ev.ContainerEventType, at: ev.CreatedAt, sandbox: ev.PodSandboxStatus.GetState(), states: map[string]runtimeapi.ContainerState{}}
		for _, c := range ev.ContainersStatuses {
			s.states[c.Id] = c.State
		}
		out = append(out, s)
	}
	return out
}

func TestContainerEvents(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 3, RunFor: 10 * time.Second}}}})
	ctx := t.Context()
	events := follow(t, e.rt.GetContainerEvents(ctx)) // subscribed from here on

	sb, cfg := e.runPod("web")
	e.clk.Step(time.Second)
	id := e.create(sb, cfg, containerConfig("app", "busybox"))
	e.clk.Step(time.Second)
	require.NoError(t, e.rt.StartContainer(ctx, id))
	e.clk.Step(10 * time.Second)
	e.clk.Step(time.Second)
	require.NoError(t, e.rt.RemoveContainer(ctx, id))
	e.clk.Step(time.Second)
	require.NoError(t, e.rt.RemovePodSandbox(ctx, sb))

	const (
		created = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
		started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
		stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
		deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
		ready   = runtimeapi.PodSandboxState_SANDBOX_READY
		down    = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	)
	none := map[string]runtimeapi.ContainerState{}
	evs := events.take(t, 8)
	assert.Equal(t, []eventSummary{
		{sb, created, nanos(0), ready, none},
		{sb, started, nanos(0), ready, none},
		{id, created, nanos(time.Second), ready, map[string]runtimeapi.ContainerState{id: runtimeapi.ContainerState_CONTAINER_CREATED}},
		{id, started, nanos(2 * time.Second), ready, map[string]runtimeapi.ContainerState{id: runtimeapi.ContainerState_CONTAINER_RUNNING}},
		{id, stopped, nanos(12 * time.Second), ready, map[string]runtimeapi.ContainerState{id: runtimeapi.ContainerState_CONTAINER_EXITED}},
		{id, deleted, nanos(13 * time.Second), ready, none},
		{sb, stopped, nanos(14 * time.Second), down, none},
		{sb, deleted, nanos(14 * time.Second), down, none},
	}, summarize(evs))

	// The statuses are complete: the exit carries the exit code and reason.
	exit := evs[4].ContainersStatuses[0]
	assert.EqualValues(t, 3, exit.ExitCode)
	assert.Equal(t, "Error", exit.Reason)
	assert.Equal(t, nanos(12*time.Second), exit.FinishedAt)
	assert.Equal(t, sb, evs[4].PodSandboxStatus.Id)
	assert.Equal(t, "web", evs[4].PodSandboxStatus.Metadata.Name)
	assert.Equal(t, "10.88.0.2", evs[4].PodSandboxStatus.Network.Ip)
}

func TestContainerEventsToSeveralSubscribers(t *testing.T) {
	e := newEnv(t, fake.Options{})
	a := follow(t, e.rt.GetContainerEvents(t.Context()))
	b := follow(t, e.rt.GetContainerEvents(t.Context()))
	e.run("app")
	evA, evB := a.take(t, 4), b.take(t, 4)
	assert.Equal(t, summarize(evA), summarize(evB))
	evA[3].ContainersStatuses[0].ExitCode = 99
	assert.Zero(t, evB[3].ContainersStatuses[0].ExitCode, "each stream owns its events")
}

func TestSlowSubscriberGetsOverflowError(t *testing.T) {
	e := newEnv(t, fake.Options{EventQueueSize: 3})
	slow := follow(t, e.rt.GetContainerEvents(t.Context()))
	fast := follow(t, e.rt.GetContainerEvents(t.Context()))

	// Five events (sandbox created and started, container created, started,
	// stopped), which never block the runtime although slow reads nothing.
	sb, cfg := e.runPod("web")
	id := e.create(sb, cfg, containerConfig("app", "busybox"))
	got := fast.take(t, 3)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	require.NoError(t, e.rt.StopContainer(t.Context(), id, 0))
	got = append(got, fast.take(t, 2)...)
	assert.Len(t, got, 5, "a subscriber that keeps up gets everything")

	queued := slow.take(t, 3)
	assert.Equal(t, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, queued[0].ContainerEventType)
	ev, err, ok := slow.next()
	require.True(t, ok)
	assert.Nil(t, ev)
	require.ErrorIs(t, err, fake.ErrEventsLost)
	require.ErrorIs(t, err, cri.ErrUnavailable, "a follower relists on it")
	assert.ErrorContains(t, err, "3 events")
	_, _, ok = slow.next()
	assert.False(t, ok, "the stream ended")

	// The runtime goes on, and the fast subscriber with it.
	require.NoError(t, e.rt.RemoveContainer(t.Context(), id))
	assert.Equal(t, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, fast.take(t, 1)[0].ContainerEventType)
}

func TestContainerEventsEnd(t *testing.T) {
	t.Run("ctx ends: no error", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		done := async(func() error {
			for _, err := range e.rt.GetContainerEvents(ctx) {
				if err != nil {
					return err
				}
			}
			return nil
		})
		e.run("app")
		cancel()
		require.NoError(t, receive(t, done))
	})

	t.Run("Close: ErrClosed", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		done := async(func() error {
			for _, err := range e.rt.GetContainerEvents(t.Context()) {
				if err != nil {
					return err
				}
			}
			return errors.New("ended without an error")
		})
		e.rt.Close()
		require.ErrorIs(t, receive(t, done), fake.ErrClosed)
		for _, err := range e.rt.GetContainerEvents(t.Context()) {
			require.ErrorIs(t, err, fake.ErrClosed, "after Close")
		}
	})

	t.Run("break stops following", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		seq := e.rt.GetContainerEvents(t.Context())
		e.run("app")
		n := 0
		for ev, err := range seq {
			require.NoError(t, err)
			require.NotNil(t, ev)
			if n++; n == 2 {
				break
			}
		}
		e.run("other") // nobody reads: nothing blocks
		// Ranging again is another stream, with only the events after it.
		first := make(chan *runtimeapi.ContainerEventResponse, 1)
		go func() {
			for ev := range seq {
				first <- ev
				return
			}
		}()
		waitUntil(t, "the second stream subscribes", func() bool { return len(e.rt.CallsOf(fake.GetContainerEvents)) == 2 })
		e.run("third")
		assert.Equal(t, "pod-third", receive(t, first).PodSandboxStatus.Metadata.Name)
	})

	t.Run("injected fault", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.InjectFault(fake.GetContainerEvents, fake.Fault{Err: fmt.Errorf("restarting: %w", cri.ErrUnavailable), Times: 1})
		for _, err := range e.rt.GetContainerEvents(t.Context()) {
			require.ErrorIs(t, err, cri.ErrUnavailable)
		}
		next := follow(t, e.rt.GetContainerEvents(t.Context()))
		e.run("app")
		next.take(t, 1)
		assert.Len(t, e.rt.CallsOf(fake.GetContainerEvents), 2)
	})
}
