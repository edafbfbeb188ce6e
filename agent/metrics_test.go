package agent_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// recordingMetrics counts what the agent measures; it is safe for
// concurrent use.
type recordingMetrics struct {
	mu        sync.Mutex
	relists   int
	lastSeen  time.Time
	work      map[podworkers.WorkKind]int
	measured  map[string]int // update type of the work measured from its start
	podStarts []time.Duration
	events    map[[2]string]int // type, reason
}

var _ agent.Metrics = (*recordingMetrics)(nil)

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{work: map[podworkers.WorkKind]int{}, measured: map[string]int{}, events: map[[2]string]int{}}
}

func (m *recordingMetrics) RelistDuration(time.Duration) { m.mu.Lock(); m.relists++; m.mu.Unlock() }
func (m *recordingMetrics) RelistInterval(time.Duration) {}
func (m *recordingMetrics) LastSeen(t time.Time)         { m.mu.Lock(); m.lastSeen = t; m.mu.Unlock() }
func (m *recordingMetrics) EventsCoalesced(int)          {}
func (m *recordingMetrics) StreamState(pleg.StreamState) {}

func (m *recordingMetrics) ObserveWork(o podworkers.WorkObservation) {
	m.mu.Lock()
	m.work[o.Kind]++
	if o.Started {
		m.measured[o.UpdateType.String()]++
	}
	m.mu.Unlock()
}

func (m *recordingMetrics) PodStartDuration(d time.Duration) {
	m.mu.Lock()
	m.podStarts = append(m.podStarts, d)
	m.mu.Unlock()
}

func (m *recordingMetrics) Event(eventtype, reason string) {
	m.mu.Lock()
	m.events[[2]string{eventtype, reason}]++
	m.mu.Unlock()
}

// The agent reports its measurements to Options.Metrics, on the node's
// clock. (TestHTTPEndpoints checks that Options.HTTP.MetricsHandler is
// served on /metrics.)
func TestMetricsHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Metrics: m}}, map[string]string{"web.yaml": webPod})
		start := n.Now()
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isReady)), "Ready")
		require.Zero(t, n.Now().Sub(start), "Ready at once")
		n.Step(time.Second)

		m.mu.Lock()
		defer m.mu.Unlock()
		// The agent's relist before it starts the blocks, then the
		// PLEG's: at once and every second.
		assert.Equal(t, 3, m.relists, "relists observed")
		assert.Equal(t, start.Add(time.Second), m.lastSeen, "last relist seen")
		assert.Positive(t, m.work[podworkers.WorkSync], "syncs observed")
		assert.Positive(t, m.measured["create"], "the pod's first sync measured from its addition: %v", m.measured)
		assert.Equal(t, []time.Duration{0}, m.podStarts, "one pod started, Running at once, observed once")
		assert.Equal(t, 1, m.events[[2]string{v1.EventTypeNormal, "Started"}], "events counted: %v", m.events)
		assert.Equal(t, 1, m.events[[2]string{v1.EventTypeNormal, "Pulled"}], "events counted: %v", m.events)
	})
}
