package fake_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

type logEntry struct {
	time    time.Time
	stream  string
	tag     string
	content string
}

var logLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

// readLog parses a CRI log file back.
func readLog(t *testing.T, path string) []logEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []logEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
		require.NotNil(t, m, "not a CRI log line: %q", sc.Text())
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		require.NoError(t, err)
		out = append(out, logEntry{ts, m[2], m[3], m[4]})
	}
	require.NoError(t, sc.Err())
	return out
}

func TestContainerLogs(t *testing.T) {
	long := strings.Repeat("x", 16*1024+10)
	e := newEnv(t, fake.Options{Rules: []fake.Rule{
		{Name: "talker", Behavior: fake.Behavior{Stdout: []string{"hello", "two\nlines", ""}, Stderr: []string{"oops"}}},
		{Name: "long", Behavior: fake.Behavior{Stdout: []string{long}}},
	}})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	cfg.LogDirectory = filepath.Join(t.TempDir(), "pods", "web")
	start := func(name string) string {
		c := containerConfig(name, "busybox")
		c.LogPath = name + "/0.log"
		id := e.create(sb, cfg, c)
		require.NoError(t, e.rt.StartContainer(ctx, id))
		return id
	}
	e.clk.Step(1500 * time.Millisecond)

	talker := start("talker")
	path := e.status(talker).LogPath
	assert.Equal(t, filepath.Join(cfg.LogDirectory, "talker", "0.log"), path)
	got := readLog(t, path)
	at := t0.Add(1500 * time.Millisecond)
	assert.Equal(t, []logEntry{
		{at, "stdout", "F", "hello"},
		{at, "stdout", "F", "two"},
		{at, "stdout", "F", "lines"},
		{at, "stdout", "F", ""},
		{at, "stderr", "F", "oops"},
	}, got)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(raw), "2026-03-01T12:00:01.5Z stdout F hello\n"), "%q", raw)

	got = readLog(t, e.status(start("long")).LogPath)
	require.Len(t, got, 2, "a line longer than 16 KiB is split")
	assert.Equal(t, "P", got[0].tag)
	assert.Equal(t, "F", got[1].tag)
	assert.Equal(t, long, got[0].content+got[1].content)

	quiet := start("quiet")
	assert.Empty(t, readLog(t, e.status(quiet).LogPath), "the file exists from the start, empty")

	// Log rotation: the kubelet moves the file away and asks for a reopen.
	require.NoError(t, os.Rename(path, path+".1"))
	require.NoError(t, e.rt.ReopenContainerLog(ctx, talker))
	assert.FileExists(t, path)
	assert.Empty(t, readLog(t, path))
}

func TestNoLogWithoutDirectoryAndPath(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{Stdout: []string{"hello"}}}}})
	sb, cfg := e.runPod("web") // no LogDirectory
	id := e.create(sb, cfg, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  "app.log",
	})
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	assert.Empty(t, e.status(id).LogPath)
	assert.NoFileExists(t, "app.log", "nothing is written relative to the working directory")
}

func TestLogDirectoryFromTheSandbox(t *testing.T) {
	e := newEnv(t, fake.Options{})
	cfg := podConfig("web")
	cfg.LogDirectory = t.TempDir()
	sb, err := e.rt.RunPodSandbox(t.Context(), cfg, "")
	require.NoError(t, err)
	c := containerConfig("app", "busybox")
	c.LogPath = "app.log"
	id := e.create(sb, nil, c)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	assert.FileExists(t, filepath.Join(cfg.LogDirectory, "app.log"))
}

func TestUnwritableLogFailsTheStart(t *testing.T) {
	e := newEnv(t, fake.Options{})
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	sb, cfg := e.runPod("web")
	cfg.LogDirectory = blocker // a file, not a directory
	c := containerConfig("app", "busybox")
	c.LogPath = "app/0.log"
	id := e.create(sb, cfg, c)
	err := e.rt.StartContainer(t.Context(), id)
	require.ErrorContains(t, err, "failed to create container loggers")
	st := e.status(id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.Equal(t, "StartError", st.Reason)
	assert.EqualValues(t, 128, st.ExitCode)
	require.NotErrorIs(t, err, cri.ErrNotFound)
}
