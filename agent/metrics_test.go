package agent_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
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
	podStarts []time.Duration
	events    map[[2]string]int // type, reason
}

var _ agent.Metrics = (*recordingMetrics)(nil)

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{work: map[podworkers.WorkKind]int{}, events: map[[2]string]int{}}
}

func (m *recordingMetrics) RelistDuration(time.Duration) { m.mu.Lock(); m.relists++; m.mu.Unlock() }
func (m *recordingMetrics) RelistInterval(time.Duration) {}
func (m *recordingMetrics) LastSeen(t time.Time)         { m.mu.Lock(); m.lastSeen = t; m.mu.Unlock() }
func (m *recordingMetrics) EventsCoalesced(int)          {}
func (m *recordingMetrics) StreamState(pleg.StreamState) {}

func (m *recordingMetrics) ObserveWork(kind podworkers.WorkKind, _ time.Duration, _ error) {
	m.mu.Lock()
	m.work[kind]++
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

// The agent reports its measurements to Options.Metrics, and serves
// Options.MetricsHandler on /metrics.
func TestMetricsHookAndHandler(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	m := newRecordingMetrics()
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics of the adapter\n") })
	n := startNodeWith(t, agent.Options{RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, Metrics: m, MetricsHandler: handler})
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	// The pod's status reaches /pods through the status manager, after
	// the sync that made it Running was observed.
	eventually(t, "a sync observed", func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.work[podworkers.WorkSync] > 0 })

	m.mu.Lock()
	assert.Positive(t, m.relists, "relists observed")
	assert.False(t, m.lastSeen.IsZero(), "last relist seen")
	require.Len(t, m.podStarts, 1, "one pod started, observed once")
	assert.Positive(t, m.podStarts[0])
	assert.Positive(t, m.events[[2]string{v1.EventTypeNormal, "Started"}], "events counted: %v", m.events)
	assert.Positive(t, m.events[[2]string{v1.EventTypeNormal, "Pulled"}], "events counted: %v", m.events)
	m.mu.Unlock()

	resp, err := http.Get(n.base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "metrics of the adapter\n", string(body))
}
