package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const webPod = `{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "web", "uid": "0f6a1e2c-web"},
 "spec": {"containers": [{"name": "web", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}`

// The agent runs a pod of its own source on the embedded fake runtime,
// through its runtime wrapper, and its status sink receives the pod's
// status, Running and Ready. The test runs in a synctest bubble: the agent's
// clock is the bubble's, so its seconds pass as soon as every goroutine
// waits.
func TestRunsAPodFromItsDirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods, statuses := t.TempDir(), filepath.Join(t.TempDir(), "statuses")
		require.NoError(t, os.WriteFile(filepath.Join(pods, "web.json"), []byte(webPod), 0o600))
		var logs bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, pods, statuses, t.TempDir(), slog.New(slog.NewTextHandler(&logs, nil))) }()

		var st v1.PodStatus
		for range 30 {
			time.Sleep(time.Second)
			if data, err := os.ReadFile(filepath.Join(statuses, "default_web.json")); err == nil {
				require.NoError(t, json.Unmarshal(data, &st))
				if st.Phase == v1.PodRunning && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].Ready {
					break
				}
			}
		}
		cancel()
		require.NoError(t, <-done)
		assert.Equal(t, v1.PodRunning, st.Phase)
		require.Len(t, st.ContainerStatuses, 1)
		assert.True(t, st.ContainerStatuses[0].Ready, "the container is ready")
		assert.Contains(t, logs.String(), `msg="container created" pod=web container=web`, "through the runtime wrapper")
	})
}

// A pod file that is not a pod is logged and left out; the others are read.
func TestReadPods(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.json"), []byte(webPod), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a pod"), 0o600))
	var logs bytes.Buffer
	pods := readPods(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	require.Len(t, pods, 1)
	assert.Equal(t, "web", pods[0].Name)
	assert.Contains(t, logs.String(), `msg="pod file ignored" file=`+filepath.Join(dir, "broken.json"))
}
