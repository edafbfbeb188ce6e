package pleg

import "time"

// Metrics receives the PLEG's measurements; it is an optional hook (nil means
// none) that a caller backs with Prometheus or anything else. The names in
// parentheses are upstream's metrics that each method stands for. Methods are
// called from the PLEG's goroutines and must not block.
type Metrics interface {
	// RelistDuration observes how long a relist took, failed or not
	// (kubelet_pleg_relist_duration_seconds).
	RelistDuration(d time.Duration)
	// RelistInterval observes the time between the starts of two
	// consecutive relists (kubelet_pleg_relist_interval_seconds).
	RelistInterval(d time.Duration)
	// LastSeen reports the start time of the last relist that succeeded
	// (kubelet_pleg_last_seen_seconds). It is reported after every
	// successful relist and on every health check, so that a relist hung in
	// the runtime shows as a last-seen time that stops moving rather than as
	// silence.
	LastSeen(t time.Time)
	// EventsCoalesced counts events that were not delivered as themselves
	// because the consumer was behind: duplicates of a pending event, or
	// events replaced by a PodSync (upstream dropped them instead:
	// kubelet_pleg_discard_events).
	EventsCoalesced(n int)
	// StreamState reports each change of the evented PLEG's connection to
	// the runtime's event stream (kubelet_evented_pleg_connection_*), and
	// each failure.
	StreamState(s StreamState)
}

// StreamState is the state of the evented PLEG's event stream.
type StreamState uint8

const (
	// StreamConnecting: a GetContainerEvents call is open but has not yet
	// proved itself (no event, not yet open for a relist period).
	StreamConnecting StreamState = iota + 1
	// StreamConnected: events flow; relisting is the slow safety net.
	StreamConnected
	// StreamFailed: the stream ended with an error; the PLEG relists and
	// retries. Reported once per failure.
	StreamFailed
	// StreamFallback: the stream failed too many times in a row; the PLEG
	// relists at the generic period until the stream is back.
	StreamFallback
)

// String returns the state's name in lower case, e.g. "fallback".
func (s StreamState) String() string {
	switch s {
	case StreamConnecting:
		return "connecting"
	case StreamConnected:
		return "connected"
	case StreamFailed:
		return "failed"
	case StreamFallback:
		return "fallback"
	}
	return "unknown"
}

// nopMetrics stands in for a nil Metrics.
type nopMetrics struct{}

func (nopMetrics) RelistDuration(time.Duration) {}
func (nopMetrics) RelistInterval(time.Duration) {}
func (nopMetrics) LastSeen(time.Time)           {}
func (nopMetrics) EventsCoalesced(int)          {}
func (nopMetrics) StreamState(StreamState)      {}
