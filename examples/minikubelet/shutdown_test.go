package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
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
			"--eviction-hard", "", "--port", "0", "--read-only-port", "0", "--healthz-port", "0",
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

// The trigger: systemd-logind's, as upstream's, unless --shutdown-signal
// names one; none without a grace period.
func TestShutdownTrigger(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want any
	}{
		{"off", nil, nil},
		{"logind", []string{"--shutdown-grace-period", "30s"}, &logind.Trigger{}},
		{"a signal", []string{"--shutdown-grace-period", "30s", "--shutdown-signal", "SIGTERM"}, &nodeshutdown.Signal{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(append(tc.args, "--root-dir", t.TempDir()), io.Discard)
			require.NoError(t, err)
			opts, _, err := options(c, io.Discard, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			if tc.want == nil {
				assert.Nil(t, opts.Shutdown.Trigger)
				return
			}
			assert.IsType(t, tc.want, opts.Shutdown.Trigger)
		})
	}
	assert.Equal(t, []os.Signal{os.Interrupt}, stopSignals(&nodeshutdown.Signal{Signals: []os.Signal{syscall.SIGTERM}}), "SIGTERM is the trigger's")
	assert.Equal(t, []os.Signal{os.Interrupt, syscall.SIGTERM}, stopSignals(&logind.Trigger{}))
}
