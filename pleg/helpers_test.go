package pleg

import (
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// recordingMetrics records what the PLEG reports.
type recordingMetrics struct {
	mu             sync.Mutex
	durations      []time.Duration
	intervals      []time.Duration
	lastSeen       time.Time
	coalescedCount int
	states         []StreamState
}

var _ Metrics = (*recordingMetrics)(nil)

func (m *recordingMetrics) RelistDuration(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.durations = append(m.durations, d)
}

func (m *recordingMetrics) RelistInterval(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.intervals = append(m.intervals, d)
}

func (m *recordingMetrics) LastSeen(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastSeen = t
}

func (m *recordingMetrics) EventsCoalesced(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.coalescedCount += n
}

func (m *recordingMetrics) StreamState(s StreamState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states = append(m.states, s)
}

func (m *recordingMetrics) coalesced() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coalescedCount
}

func (m *recordingMetrics) streamStates() []StreamState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]StreamState(nil), m.states...)
}

// shows reports whether st, a pod's status in the cache, shows what ev
// reports: the container or sandbox running after ContainerStarted, not
// running (or gone) after ContainerDied, gone after ContainerRemoved.
func shows(st *cri.PodStatus, ev Event) bool {
	var found, running bool
	if ev.Sandbox {
		for _, sb := range st.Sandboxes {
			if sb.GetId() == ev.ContainerID {
				found, running = true, sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
			}
		}
	} else if c := st.ContainerByID(ev.ContainerID); c != nil {
		found, running = true, c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	switch ev.Type {
	case ContainerStarted:
		return running
	case ContainerDied:
		return !running
	case ContainerRemoved:
		return !found
	}
	return true
}

// handedOver records the events a consumer function got and, for each,
// whether the cache showed it then.
type handedOver struct {
	cache  *Cache
	mu     sync.Mutex
	events []string
}

// onEvents is the consumer function.
func (h *handedOver) onEvents(events []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		st, err := h.cache.Get(ev.PodUID)
		if err != nil || !shows(st, ev) {
			h.events = append(h.events, ev.String()+" (not in the cache yet)")
		} else {
			h.events = append(h.events, ev.String())
		}
	}
}

// take returns the events recorded since the last call.
func (h *handedOver) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.events
	h.events = nil
	return s
}
