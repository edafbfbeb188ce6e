package prober_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/prober/probertest"
)

// A status that finds a started container not yet ready runs its readiness
// probe at once, as upstream's UpdatePodStatus does, rather than a period
// later: the container is ready as soon as its startup probe succeeds, or
// as soon as the status after its start is generated. The triggered run
// probes the container the generating status found, even before that
// status is stored where the worker reads statuses.
func TestUnreadyStatusTriggersReadiness(t *testing.T) {
	tests := []struct {
		name string
		// stored is the status where the worker reads statuses when the
		// generated status (running c1 since t0+2s) is filled in.
		stored  *v1.PodStatus
		startup bool // the container has a startup probe, which succeeds first
	}{
		{name: "stored status as new", stored: ptr(running("c1", t0.Add(2*time.Second)))},
		{name: "not yet stored: the generated status's container is probed"},
		{name: "stored status of the container before a restart", stored: ptr(running("c0", t0))},
		{name: "the startup probe succeeded", stored: ptr(running("c1", t0.Add(2*time.Second))), startup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			c := v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 1)}
			if tt.startup {
				c.StartupProbe = probe(0, 5, 1, 1)
			}
			pod := podWith(c)
			// Added before its container starts: the first runs find
			// nothing to probe and are a period later.
			h.m.AddPod(pod)
			stepWhenParked(t, h.clk, 2*time.Second)
			if tt.stored != nil {
				h.st.Set(pod.UID, *tt.stored)
			}
			if tt.startup {
				// At t0+5s the startup probe succeeds; the readiness
				// worker is next due at t0+10s.
				stepWhenParked(t, h.clk, 3*time.Second)
				require.Equal(t, prober.Success, h.next(t), "the startup probe")
			}
			at := h.clk.Now()

			generated := running("c1", t0.Add(2*time.Second))
			h.m.UpdatePodStatus(pod, &generated)
			cs := generated.ContainerStatuses[0]
			require.True(t, *cs.Started)
			assert.False(t, cs.Ready, "not ready before its readiness probe succeeds")
			require.Equal(t, prober.Success, h.next(t))
			calls := h.run.Calls()
			last := calls[len(calls)-1]
			assert.Equal(t, prober.Readiness, last.Type, "the readiness probe, run without the clock moving")
			assert.Equal(t, "c1", last.ContainerID)
			assert.Equal(t, at, h.clk.Now())

			generated = running("c1", t0.Add(2*time.Second))
			h.m.UpdatePodStatus(pod, &generated)
			assert.True(t, generated.ContainerStatuses[0].Ready)
			// Ready: no further trigger. The period starts over from the
			// triggered run, whose status is stored by then.
			h.st.Set(pod.UID, running("c1", t0.Add(2*time.Second)))
			stepWhenParked(t, h.clk, 10*time.Second-time.Millisecond)
			assert.Len(t, h.run.Calls(), len(calls), "no run before a period from the triggered one")
			stepWhenParked(t, h.clk, time.Millisecond)
			waitCalls(t, h, len(calls)+1)
		})
	}
}

// waitCalls waits until the runner has been called n times, and returns
// the calls.
func waitCalls(t *testing.T, h *harness, n int) []probertest.Call {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls := h.run.Calls()
		if len(calls) >= n {
			return calls
		}
		require.True(t, time.Now().Before(deadline), "%d probe calls, want %d", len(calls), n)
		runtimeGosched()
	}
}

// A container without a readiness probe is ready once started, and
// nothing runs.
func TestReadyWithoutReadinessProbe(t *testing.T) {
	h := newHarness(t, nil)
	pod := podWith(v1.Container{Name: "app", LivenessProbe: probe(0, 10, 1, 1)})
	h.m.AddPod(pod)
	stepWhenParked(t, h.clk, 2*time.Second)
	st := running("c1", t0.Add(2*time.Second))
	h.m.UpdatePodStatus(pod, &st)
	assert.True(t, st.ContainerStatuses[0].Ready)
	assert.Empty(t, h.run.Calls())
}

func ptr[T any](v T) *T { return &v }
