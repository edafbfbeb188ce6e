package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --shutdown-signal: the signal shuts the node down gracefully, its pods
// are terminated with the shutdown's status, and minikubelet exits.
func TestShutdownSignal(t *testing.T) {
	// Until minikubelet's trigger listens, SIGUSR2 must not kill the test.
	held := make(chan os.Signal, 16)
	signal.Notify(held, syscall.SIGUSR2)
	defer signal.Stop(held)

	dir := t.TempDir()
	manifests := webManifests(t, dir)
	out := &syncBuffer{}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- run(ctx, []string{"--node-name", "edge1", "--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", manifests,
			"--eviction-hard", "", "--port", "0", "--read-only-port", "0",
			"--shutdown-grace-period", "4s", "--shutdown-grace-period-critical-pods", "2s", "--shutdown-signal", "usr2"}, out, io.Discard)
	}()
	// The agent's real clock: wait for the pod to run, then signal until
	// the node has shut down (the trigger listens once the agent has
	// started).
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "web-edge1  Running") {
		require.True(t, time.Now().Before(deadline), "the pod did not run: %s", out.String())
		time.Sleep(20 * time.Millisecond)
	}
	var err error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR2))
		select {
		case err = <-done:
			break wait
		case <-tick.C:
			require.True(t, time.Now().Before(deadline), "minikubelet did not exit: %s", out.String())
		}
	}
	require.NoError(t, err)
	assert.Contains(t, out.String(), "default/web-edge1  Failed")
	assert.Contains(t, out.String(), "minikubelet: the node shut down; exiting")
}
