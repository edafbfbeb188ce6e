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

// TestEchoedCommandsLog: a container no rule matches writes what the echo
// commands at the start of its command print, and runs on.
func TestEchoedCommandsLog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		want    []string
	}{
		{"echo", []string{"echo", "hello", "world"}, []string{"hello world"}},
		{"echo -n", []string{"/bin/echo", "-n", "x"}, []string{"x"}},
		{"a script", []string{"sh", "-c", "echo serving; exec sleep 3600"}, []string{"serving"}},
		{"quotes and &&", []string{"/bin/sh", "-c", "true && echo 'a  b' && echo \"c\"\nsleep 1; echo late"}, []string{"a  b", "c"}},
		{"after ||, nothing", []string{"sh", "-c", "echo a || echo b"}, []string{"a"}},
		{"another command first", []string{"sleep", "3600"}, nil},
		{"syntax the fake leaves", []string{"sh", "-c", "echo $HOME; sleep 1"}, nil},
		{"no command", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{})
			sb, cfg := e.runPod("web")
			cfg.LogDirectory = t.TempDir()
			c := containerConfig("app", "busybox")
			c.Command, c.LogPath = tc.command, "app.log"
			id := e.create(sb, cfg, c)
			require.NoError(t, e.rt.StartContainer(t.Context(), id))
			var got []string
			for _, l := range readLog(t, e.status(id).LogPath) {
				got = append(got, l.content)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(id).State, "it runs until stopped")
		})
	}
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

func TestPeriodicLogAndReopen(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{
		{Name: "loop", Behavior: fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 3}},
		{Name: "short", Behavior: fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 5, Outcome: fake.Exit, RunFor: 2500 * time.Millisecond}},
		{Name: "no-repeat", Behavior: fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second}},
	}})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	cfg.LogDirectory = t.TempDir()
	start := func(name string) (string, string) {
		c := containerConfig(name, "busybox")
		c.LogPath = name + ".log"
		id := e.create(sb, cfg, c)
		require.NoError(t, e.rt.StartContainer(ctx, id))
		return id, filepath.Join(cfg.LogDirectory, c.LogPath)
	}
	times := func(entries []logEntry) []time.Time {
		var out []time.Time
		for _, l := range entries {
			assert.Equal(t, "tick", l.content)
			out = append(out, l.time)
		}
		return out
	}

	t.Run("repeats every interval, a limited number of times", func(t *testing.T) {
		_, path := start("loop")
		e.clk.Step(1500 * time.Millisecond)
		assert.Equal(t, []time.Time{t0, t0.Add(time.Second)}, times(readLog(t, path)))
		e.clk.Step(10 * time.Second)
		assert.Len(t, readLog(t, path), 4, "the start's lines and 3 repetitions")
	})

	t.Run("stops when the container exits", func(t *testing.T) {
		base := e.clk.Now()
		id, path := start("short")
		e.clk.Step(time.Minute)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, e.status(id).State)
		assert.Equal(t, []time.Time{base, base.Add(time.Second), base.Add(2 * time.Second)}, times(readLog(t, path)))
	})

	t.Run("without a repeat count it logs once", func(t *testing.T) {
		_, path := start("no-repeat")
		e.clk.Step(time.Minute)
		assert.Len(t, readLog(t, path), 1)
	})
}

func TestPeriodicLogFollowsReopen(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{
		{Behavior: fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 10}},
	}})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	cfg.LogDirectory = t.TempDir()
	c := containerConfig("loop", "busybox")
	c.LogPath = "loop.log"
	id := e.create(sb, cfg, c)
	require.NoError(t, e.rt.StartContainer(ctx, id))
	path := filepath.Join(cfg.LogDirectory, "loop.log")
	e.clk.Step(time.Second)
	require.Len(t, readLog(t, path), 2)

	// Rotation: until the reopen, lines go to the renamed file, as they do
	// to a runtime's open file descriptor.
	require.NoError(t, os.Rename(path, path+".1"))
	e.clk.Step(time.Second)
	assert.NoFileExists(t, path, "the runtime does not recreate the file by itself")
	assert.Len(t, readLog(t, path+".1"), 3)

	require.NoError(t, e.rt.ReopenContainerLog(ctx, id))
	assert.Empty(t, readLog(t, path), "a new, empty file")
	e.clk.Step(2 * time.Second)
	assert.Len(t, readLog(t, path), 2, "new lines go to the new file")
	assert.Len(t, readLog(t, path+".1"), 3, "the old file no longer changes")

	require.NoError(t, e.rt.StopContainer(ctx, id, 0))
	e.clk.Step(time.Minute)
	assert.Len(t, readLog(t, path), 2, "a stopped container logs nothing")
	assert.False(t, e.clk.HasWaiters(), "its timers are stopped")
}

func TestPeriodicLogTimersEndWithClose(t *testing.T) {
	clkEnv := newEnv(t, fake.Options{Rules: []fake.Rule{
		{Behavior: fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 3}},
	}})
	sb, cfg := clkEnv.runPod("web")
	cfg.LogDirectory = t.TempDir()
	c := containerConfig("loop", "busybox")
	c.LogPath = "loop.log"
	id := clkEnv.create(sb, cfg, c)
	require.NoError(t, clkEnv.rt.StartContainer(t.Context(), id))
	require.True(t, clkEnv.clk.HasWaiters())
	clkEnv.rt.Close()
	assert.False(t, clkEnv.clk.HasWaiters(), "Close stops the log timers")
	clkEnv.clk.Step(time.Minute)
	assert.Len(t, readLog(t, filepath.Join(cfg.LogDirectory, "loop.log")), 1)
}
