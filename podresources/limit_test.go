package podresources_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/podresources"
)

func TestLimiter(t *testing.T) {
	type step struct {
		after   time.Duration
		calls   int
		allowed int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a burst of 10, then refused", []step{{0, 15, 10}}},
		{"one call more every 10ms", []step{{0, 10, 10}, {10 * time.Millisecond, 2, 1}, {5 * time.Millisecond, 1, 0}, {5 * time.Millisecond, 1, 1}}},
		{"idle refills to the burst, no more", []step{{0, 10, 10}, {time.Hour, 12, 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			l := podresources.NewLimiter(clk, podresources.DefaultQPS, podresources.DefaultBurst)
			for i, s := range tc.steps {
				clk.SetTime(clk.Now().Add(s.after))
				allowed := 0
				for range s.calls {
					if l.Allow() {
						allowed++
					}
				}
				assert.Equal(t, s.allowed, allowed, "step %d", i)
			}
		})
	}
}

// A client calling 100 times a second, evenly, is never refused; at 200 a
// second, half its calls are.
func TestLimiterSteadyRate(t *testing.T) {
	for _, tc := range []struct {
		every   time.Duration
		allowed int
	}{{10 * time.Millisecond, 1000}, {5 * time.Millisecond, 509}} {
		clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		l := podresources.NewLimiter(clk, podresources.DefaultQPS, podresources.DefaultBurst)
		allowed := 0
		for range 1000 {
			if l.Allow() {
				allowed++
			}
			clk.SetTime(clk.Now().Add(tc.every))
		}
		assert.InDelta(t, tc.allowed, allowed, 1, "a call every %v", tc.every)
	}
}
