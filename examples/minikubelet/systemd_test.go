package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under a unit with WatchdogSec= (here 2s) minikubelet tells systemd's
// notification socket, a datagram socket of the test's, that it has
// started ("READY=1") and keeps feeding the watchdog ("WATCHDOG=1").
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notify")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--node-name", "edge1", "--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", webManifests(t, dir),
			"--eviction-hard", "", "--port", "0", "--read-only-port", "0", "--healthz-port", "0"}, io.Discard, io.Discard)
	}()
	// The agent's real clock: the datagrams arrive within seconds.
	require.NoError(t, sock.SetReadDeadline(time.Now().Add(30*time.Second)))
	got := map[string]int{}
	buf := make([]byte, 256)
	for got["READY=1"] == 0 || got["WATCHDOG=1"] < 2 {
		n, err := sock.Read(buf)
		require.NoError(t, err, "received %v", got)
		got[string(buf[:n])]++
	}
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, 1, got["READY=1"], "once")
	assert.Len(t, got, 2, "nothing else: %v", got)
}

// A malformed watchdog environment, or a timeout of a second or less,
// stops minikubelet before it starts, as upstream's kubelet.
func TestSystemdWatchdogErrors(t *testing.T) {
	for usec, want := range map[string]string{
		"2s":      "configure watchdog: error converting WATCHDOG_USEC",
		"1000000": "configure watchdog timeout too small: 1s",
	} {
		t.Run(usec, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", usec)
			t.Setenv("WATCHDOG_PID", "")
			err := run(context.Background(), []string{"--root-dir", t.TempDir()}, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
