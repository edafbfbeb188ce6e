package dra

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Upstream's wait.Backoff{Duration: 1s, Factor: 2, Jitter: 0.2, Cap: 5m,
// Steps: 100} as ExponentialBackoffWithContext uses it: the cap ends the
// tries once the next wait would pass it.
func TestWipeBackoff(t *testing.T) {
	for _, tc := range []struct {
		failed int
		r      float64
		want   time.Duration
		ok     bool
	}{
		{0, 0, 0, false},
		{1, 0, time.Second, true},
		{1, 0.5, 1100 * time.Millisecond, true},
		{1, 0.999, time.Second + 199800*time.Microsecond, true},
		{2, 0, 2 * time.Second, true},
		{3, 1, 4*time.Second + 800*time.Millisecond, true},
		{8, 0, 128 * time.Second, true},
		{9, 0, 0, false},
		{100, 0, 0, false},
	} {
		got, ok := wipeBackoff(tc.failed, tc.r)
		assert.Equal(t, tc.ok, ok, "after %d failures", tc.failed)
		assert.Equal(t, tc.want, got, "after %d failures, r %v", tc.failed, tc.r)
	}
}

// Upstream's sync: usable cancels, not usable schedules unless pending.
func TestDecideWipe(t *testing.T) {
	for _, tc := range []struct {
		usable, pending bool
		want            wipeDecision
	}{
		{true, false, wipeKeep},
		{true, true, wipeCancel},
		{false, false, wipeSchedule},
		{false, true, wipeKeep},
	} {
		assert.Equal(t, tc.want, decideWipe(tc.usable, tc.pending), "usable %v, pending %v", tc.usable, tc.pending)
	}
}
