package nodeshutdown_test

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
)

// handler records what a trigger asked.
type handler struct{ shutdowns chan struct{} }

func (h *handler) Shutdown(context.Context) error { h.shutdowns <- struct{}{}; return nil }
func (h *handler) Cancel()                        {}

// The signal begins one shutdown; Run returns once ctx ends.
func TestSignalTrigger(t *testing.T) {
	// Until the trigger listens, SIGUSR1 must not kill the test.
	held := make(chan os.Signal, 16)
	signal.Notify(held, syscall.SIGUSR1)
	defer signal.Stop(held)

	h := &handler{shutdowns: make(chan struct{}, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&nodeshutdown.Signal{Signals: []os.Signal{syscall.SIGUSR1}}).Run(ctx, h) }()
	// The trigger listens from some instant after Run began: signal until
	// it has seen one.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
wait:
	for {
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
		select {
		case <-h.shutdowns:
			break wait
		case <-tick.C:
		case <-deadline:
			t.Fatal("the trigger did not call Shutdown")
		}
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	cancel()
	require.NoError(t, <-done)
	assert.Empty(t, h.shutdowns, "one shutdown, whatever the signals after it")
}

func TestSignalTriggerNeedsSignals(t *testing.T) {
	err := (&nodeshutdown.Signal{}).Run(context.Background(), &handler{})
	require.EqualError(t, err, "node shutdown signal trigger: no signals")
}
