package prober

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Result is the outcome of a probe, or the cached state of a container for
// one probe type.
type Result int

const (
	// Unknown: no result yet, or the probe could not be run.
	Unknown Result = iota
	// Success: the probe passed.
	Success
	// Failure: the probe failed.
	Failure
)

// String returns "Unknown", "Success" or "Failure".
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// ProbeType names one of a container's three probes.
type ProbeType int

const (
	// Liveness restarts a container that fails it.
	Liveness ProbeType = iota
	// Readiness sets the container's Ready.
	Readiness
	// Startup gates liveness and readiness until it succeeds.
	Startup
)

// String returns "Liveness", "Readiness" or "Startup", as upstream's event
// messages spell them.
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	default:
		return "Startup"
	}
}

// Update is a change of a container's cached result.
type Update struct {
	// ContainerID is the bare CRI container ID (no "runtime://" prefix).
	ContainerID string
	// Result is the new result.
	Result Result
	// PodUID is the UID of the container's pod.
	PodUID types.UID
}

// UpdatesBuffer is the capacity of a ResultsManager's updates channel.
const UpdatesBuffer = 20

// ResultsManager caches the latest result of one probe type for each
// container, keyed by bare CRI container ID, and publishes every change on a
// channel. It is safe for concurrent use.
//
// Set sends an Update only when the result changes, and blocks while the
// channel's buffer (UpdatesBuffer) is full: no transition is ever dropped, so
// the consumer (the sync loop) must keep draining Updates. The prober's own
// workers stop waiting when Manager.Run's context ends.
type ResultsManager struct {
	mu      sync.RWMutex
	cache   map[string]Result
	updates chan Update
}

// NewResultsManager returns an empty results manager.
func NewResultsManager() *ResultsManager {
	return &ResultsManager{cache: make(map[string]Result), updates: make(chan Update, UpdatesBuffer)}
}

// Get returns the cached result of a container and whether there is one.
func (m *ResultsManager) Get(containerID string) (Result, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.cache[containerID]
	return r, ok
}

// Set caches result for the container and, when it changed, sends an Update
// (blocking while the buffer is full).
func (m *ResultsManager) Set(containerID string, result Result, podUID types.UID) {
	_ = m.SetContext(context.Background(), containerID, result, podUID)
}

// SetContext is Set that stops waiting for buffer space when ctx ends; the
// result stays cached and the ctx error is returned.
func (m *ResultsManager) SetContext(ctx context.Context, containerID string, result Result, podUID types.UID) error {
	_, err := m.set(ctx, containerID, result, podUID)
	return err
}

// set is SetContext that also reports whether it sent an Update.
func (m *ResultsManager) set(ctx context.Context, containerID string, result Result, podUID types.UID) (bool, error) {
	if !m.setCache(containerID, result) {
		return false, nil
	}
	return true, m.send(ctx, containerID, result, podUID)
}

// send sends an Update, whatever the cache holds.
func (m *ResultsManager) send(ctx context.Context, containerID string, result Result, podUID types.UID) error {
	select {
	case m.updates <- Update{ContainerID: containerID, Result: result, PodUID: podUID}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *ResultsManager) setCache(id string, result Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.cache[id]
	if ok && prev == result {
		return false
	}
	m.cache[id] = result
	return true
}

// Remove forgets the container's result; it sends no Update.
func (m *ResultsManager) Remove(containerID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, containerID)
}

// Updates returns the receive-only channel of changes.
func (m *ResultsManager) Updates() <-chan Update { return m.updates }
