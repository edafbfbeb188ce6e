package pleg

import (
	"sync"
	"time"
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
