package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestCallTimer: each call begun gets the whole timeout from its start,
// however long the calls before it took; a call that times out sees
// errRuntimeTimeout as the cause, and the next call gets a live context.
func TestCallTimer(t *testing.T) {
	const timeout = time.Minute
	tests := []struct {
		name string
		// steps are how long each call takes; a call of timeout or more
		// times out.
		steps []time.Duration
	}{
		{"calls within the timeout", []time.Duration{timeout - time.Second, timeout - time.Second, timeout - time.Second}},
		{"a call times out, the next does not", []time.Duration{timeout - time.Second, timeout, time.Second}},
		{"calls time out one after another", []time.Duration{timeout, timeout, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			c := callTimer{parent: t.Context(), clock: clk, timeout: timeout}
			defer c.close()
			for i, d := range tt.steps {
				ctx := c.begin()
				require.NoError(t, ctx.Err(), "call %d starts with a live context", i)
				clk.Step(d)
				if d >= timeout {
					assert.ErrorIs(t, context.Cause(ctx), errRuntimeTimeout, "call %d timed out", i)
				} else {
					assert.NoError(t, ctx.Err(), "call %d has not timed out", i)
				}
				c.end()
			}
			c.close()
			assert.False(t, clk.HasWaiters(), "close stops the timer")
		})
	}
}

// TestCallTimerEndsWithParent: the calls' context ends with the parent's.
func TestCallTimerEndsWithParent(t *testing.T) {
	parent, cancel := context.WithCancel(t.Context())
	c := callTimer{parent: parent, clock: clocktesting.NewFakeClock(t0), timeout: time.Minute}
	defer c.close()
	ctx := c.begin()
	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	c.end()
	assert.ErrorIs(t, c.begin().Err(), context.Canceled)
}
