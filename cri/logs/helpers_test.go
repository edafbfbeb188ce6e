package logs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a fake runtime on a fake clock with one ready sandbox whose
// logs go to a temporary directory.
type env struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	rt       *fake.Runtime
	sandbox  string
	sbConfig *runtimeapi.PodSandboxConfig
}

func newEnv(t *testing.T, rules ...fake.Rule) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox"}, Rules: rules})
	t.Cleanup(rt.Close)
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		LogDirectory: filepath.Join(t.TempDir(), "default_web_uid-1"),
	}
	sb, err := rt.RunPodSandbox(t.Context(), cfg, "")
	require.NoError(t, err)
	return &env{t: t, clk: clk, rt: rt, sandbox: sb, sbConfig: cfg}
}

// start creates and starts container name and returns its ID and log
// path.
func (e *env) start(name string) (string, string) {
	e.t.Helper()
	id, err := e.rt.CreateContainer(e.t.Context(), e.sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  name + "/0.log",
	}, e.sbConfig)
	require.NoError(e.t, err)
	require.NoError(e.t, e.rt.StartContainer(e.t.Context(), id))
	resp, err := e.rt.ContainerStatus(e.t.Context(), id, false)
	require.NoError(e.t, err)
	return id, resp.GetStatus().GetLogPath()
}

// runtimeWriter writes a container's log as a runtime does: to the file
// it opened, which stays its file after a rename until reopen.
type runtimeWriter struct {
	t    *testing.T
	path string
	f    *os.File
	n    int // lines written
}

func newRuntimeWriter(t *testing.T, path string) *runtimeWriter {
	t.Helper()
	w := &runtimeWriter{t: t, path: path}
	w.reopen()
	t.Cleanup(func() { _ = w.f.Close() })
	return w
}

// lines writes count numbered full lines to stdout.
func (w *runtimeWriter) lines(count int) {
	w.t.Helper()
	for range count {
		w.n++
		w.raw(fmt.Sprintf("%s stdout F line %d\n", start.Add(time.Duration(w.n)*time.Millisecond).Format(time.RFC3339Nano), w.n))
	}
}

func (w *runtimeWriter) raw(s string) {
	w.t.Helper()
	_, err := w.f.WriteString(s)
	require.NoError(w.t, err)
}

// reopen opens the file at the path (creating it) and writes there from
// now on.
func (w *runtimeWriter) reopen() {
	w.t.Helper()
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	require.NoError(w.t, err)
	if w.f != nil {
		require.NoError(w.t, w.f.Close())
	}
	w.f = f
}

// numbered returns the lines "line from" to "line to", each with a
// newline.
func numbered(from, to int) string {
	var b bytes.Buffer
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// syncBuffer is a buffer written by a follower and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until cond holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, time.Millisecond, "waiting for %s", what)
}
