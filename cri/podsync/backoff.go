package podsync

import (
	"time"

	"k8s.io/utils/clock"
)

// Default backoff timings, upstream's.
const (
	// DefaultBackoffInitial is the first delay of a crash loop or of image
	// pull failures.
	DefaultBackoffInitial = 10 * time.Second
	// DefaultBackoffMax caps the delay; a key untouched for twice this long
	// (ten minutes, e.g. a container that ran that long) starts over.
	DefaultBackoffMax = 5 * time.Minute
)

// backoff is a per-key exponential delay, as upstream's flowcontrol.Backoff
// behaves: each Next doubles the delay (initial, 2×, ... up to max), and a
// key whose last update is more than reset before the event starts over
// (flowcontrol's default is 2×max; upstream's crash loop keeps 10 minutes
// whatever its max, its HasExpiredFunc). Not safe for concurrent use; the
// Syncer guards it.
type backoff struct {
	clock               clock.PassiveClock
	initial, max, reset time.Duration
	entries             map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
	// note is what the last failure said (image pulls: "ErrImagePull:
	// <the runtime's message>"), for the back-off's message.
	note string
}

// newBackoff returns a backoff from initial (at most max) up to max, whose
// keys start over after reset without an event.
func newBackoff(c clock.PassiveClock, initial, max, reset time.Duration) *backoff {
	return &backoff{clock: c, initial: min(initial, max), max: max, reset: reset, entries: map[string]*backoffEntry{}}
}

func (b *backoff) expired(e *backoffEntry, event time.Time) bool {
	return event.Sub(e.lastUpdate) > b.reset
}

// inBackoffSince reports whether the key is still backing off from an event
// at the given time, and the current delay.
func (b *backoff) inBackoffSince(key string, event time.Time) (bool, time.Duration) {
	e, ok := b.entries[key]
	if !ok || b.expired(e, event) {
		return false, 0
	}
	return b.clock.Since(event) < e.delay, e.delay
}

// next records an event for key: the delay doubles, or starts at initial.
func (b *backoff) next(key string, event time.Time) time.Duration {
	e, ok := b.entries[key]
	if !ok || b.expired(e, event) {
		e = &backoffEntry{delay: b.initial}
		b.entries[key] = e
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = b.clock.Now()
	return e.delay
}

// forgetPrefix drops every key starting with prefix.
func (b *backoff) forgetPrefix(prefix string) {
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}

// inBackoffSinceUpdate reports whether less than the key's delay has
// passed since its last update (as of now), and the note of that update.
func (b *backoff) inBackoffSinceUpdate(key string, now time.Time) (bool, string) {
	e, ok := b.entries[key]
	if !ok || b.expired(e, now) {
		return false, ""
	}
	return now.Sub(e.lastUpdate) < e.delay, e.note
}

// note records what the key's last failure said.
func (b *backoff) setNote(key, note string) {
	if e, ok := b.entries[key]; ok {
		e.note = note
	}
}

func timeFromNanos(ns int64) time.Time { return time.Unix(0, ns) }
