package agenttest_test

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

// SystemdWatchdog (GA 1.35): under a unit with WatchdogSec=10s the node
// sends "WATCHDOG=1" every 5s while /healthz's checks pass, and none while
// one fails, so that systemd restarts a stuck node.
func TestSystemdWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var start time.Time
		var mu sync.Mutex
		var sent []time.Duration
		var now func() time.Time // the node's clock, once NewNode returns
		notifier := watchdog.NotifierFunc(func(state string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, "WATCHDOG=1", state)
			var at time.Duration // as the agent starts
			if now != nil {
				at = now().Sub(start)
			}
			sent = append(sent, at)
			return true, nil
		})
		took := func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			s := sent
			sent = nil
			return s
		}
		var failing atomic.Bool
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			Watchdog: agent.WatchdogOptions{Timeout: 10 * time.Second, Notifier: notifier},
			HTTP: agent.HTTPOptions{HealthChecks: []server.HealthCheck{{Name: "custom", Check: func(*http.Request) error {
				if failing.Load() {
					return errors.New("broken")
				}
				return nil
			}}}},
		}})
		mu.Lock()
		start, now = n.Now(), n.Now
		mu.Unlock()
		n.Step(12 * time.Second)
		got := took()
		// The first tick, as the agent starts, may find the sync loop not
		// yet started, and skip.
		assert.GreaterOrEqual(t, len(got), 2, "every 5s: %v", got)
		for i := 1; i < len(got); i++ {
			assert.Equal(t, 5*time.Second, got[i]-got[i-1], "%v", got)
		}
		failing.Store(true)
		n.Step(20 * time.Second)
		assert.Empty(t, took(), "none while a check fails")
		failing.Store(false)
		n.Step(5 * time.Second)
		assert.Len(t, took(), 1, "again once healthy")
	})
}

// A watchdog timeout of a second or less is refused, as upstream's.
func TestSystemdWatchdogTimeoutTooSmall(t *testing.T) {
	_, err := agent.New(agent.Options{Watchdog: agent.WatchdogOptions{Timeout: time.Second}})
	assert.ErrorIs(t, err, watchdog.ErrTimeoutTooSmall)
	assert.ErrorIs(t, err, agent.ErrInvalidOptions)
}
