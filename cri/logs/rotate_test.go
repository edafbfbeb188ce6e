package logs_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// tickLine is what the ticker container logs every second: 100 bytes of
// content, 141 bytes a line.
var tickLine = strings.Repeat("0123456789", 10)

func tickerEnv(t *testing.T) *env {
	return newEnv(t, fake.Rule{Name: "ticker", Behavior: fake.Behavior{
		Stdout: []string{tickLine}, LogEvery: time.Second, LogRepeat: 300,
	}})
}

func newRotator(t *testing.T, e *env, o logs.RotatorOptions) *logs.Rotator {
	t.Helper()
	o.Runtime, o.Clock = e.rt, e.clk
	r, err := logs.NewRotator(o)
	require.NoError(t, err)
	return r
}

// readLines returns the lines of a log file, gunzipped if it ends in .gz;
// each must be a CRI line of the ticker.
func readLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		r = zr
	}
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e logs.Entry
		require.NoError(t, logs.ParseCRILog(sc.Bytes(), &e), "%s: %q", path, sc.Text())
		require.Equal(t, tickLine, string(e.Content))
		n++
	}
	require.NoError(t, sc.Err())
	return n
}

// logFiles returns the names of the files of the log at path, as AllLogs
// lists them.
func logFiles(t *testing.T, path string) []string {
	t.Helper()
	paths, err := logs.AllLogs(path)
	require.NoError(t, err)
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func TestRotate(t *testing.T) {
	e := tickerEnv(t)
	_, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000, MaxFiles: 4})
	ctx := t.Context()
	written := 1 // the line at start

	// Below MaxSize: nothing happens.
	e.clk.Step(5 * time.Second)
	written += 5
	require.NoError(t, r.Rotate(ctx))
	assert.Empty(t, e.rt.CallsOf(fake.ReopenContainerLog))
	all := logFiles(t, path)
	assert.Equal(t, []string{"0.log"}, all)

	var want []string
	for round := 1; round <= 5; round++ {
		e.clk.Step(9 * time.Second)
		written += 9
		require.Equal(t, written, readLines(t, path), "round %d: the live log has every line since the last rotation", round)
		rotated := "0.log." + e.clk.Now().Format(logs.RotatedTimeFormat)
		require.NoError(t, r.Rotate(ctx))
		assert.Zero(t, readLines(t, path), "a new live log")
		assert.Equal(t, written, readLines(t, filepath.Join(filepath.Dir(path), rotated)), "the rotated file keeps them")
		written = 0

		for i := range want {
			want[i] = strings.TrimSuffix(want[i], ".gz") + ".gz"
		}
		want = append(want, rotated)
		if len(want) > 3 {
			want = want[len(want)-3:]
		}
		all := logFiles(t, path)
		assert.Equal(t, append(append([]string(nil), want...), "0.log"), all, "round %d", round)
		for _, p := range all {
			readLines(t, filepath.Join(filepath.Dir(path), p))
		}
		// The runtime writes to the new file.
		e.clk.Step(time.Second)
		written++
		require.Equal(t, 1, readLines(t, path))
	}
	assert.Len(t, e.rt.CallsOf(fake.ReopenContainerLog), 5)
}

func TestRotateSkips(t *testing.T) {
	e := tickerEnv(t)
	ticker, path := e.start("ticker")
	quiet, quietPath := e.start("quiet")
	require.NoError(t, os.WriteFile(quietPath, []byte(strings.Repeat("2026-03-01T12:00:00Z stdout F "+tickLine+"\n", 20)), 0o640))
	require.NoError(t, e.rt.StopContainer(t.Context(), quiet, 0))
	disabled := newRotator(t, e, logs.RotatorOptions{MaxSize: -1})
	e.clk.Step(20 * time.Second)

	require.NoError(t, disabled.Rotate(t.Context()))
	require.NoError(t, disabled.RotateContainer(t.Context(), ticker))
	assert.Empty(t, e.rt.CallsOf(fake.ReopenContainerLog), "rotation off")

	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000})
	require.NoError(t, r.Rotate(t.Context()))
	assert.Len(t, e.rt.CallsOf(fake.ReopenContainerLog), 1, "only the running container")
	all := logFiles(t, quietPath)
	assert.Len(t, all, 1, "a stopped container's log stays")
	all = logFiles(t, path)
	assert.Len(t, all, 2)
}

func TestRotateReopenFails(t *testing.T) {
	e := tickerEnv(t)
	_, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000})
	e.clk.Step(10 * time.Second)
	e.rt.InjectFault(fake.ReopenContainerLog, fake.Fault{Err: cri.ErrUnavailable, Times: 1})
	err := r.Rotate(t.Context())
	require.ErrorIs(t, err, cri.ErrUnavailable)
	assert.ErrorContains(t, err, "failed to reopen container log")
	all := logFiles(t, path)
	assert.Equal(t, []string{"0.log"}, all, "renamed back")
	assert.Equal(t, 11, readLines(t, path))
	// The runtime still writes to it, and the next round rotates it.
	e.clk.Step(time.Second)
	assert.Equal(t, 12, readLines(t, path))
	require.NoError(t, r.Rotate(t.Context()))
	all = logFiles(t, path)
	assert.Len(t, all, 2)
}

func TestRotateLeftovers(t *testing.T) {
	e := tickerEnv(t)
	_, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000, MaxFiles: 5})
	dir := filepath.Dir(path)
	for _, name := range []string{
		"0.log.20200101-000000.gz", "0.log.20200101-000000", // compressed, not yet removed
		"0.log.20200101-000001.tmp", // compression interrupted
		"0.log.20200101-000002",     // rotated, not compressed
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o640))
	}
	gz, err := os.Create(filepath.Join(dir, "0.log.20200101-000000.gz"))
	require.NoError(t, err)
	zw := gzip.NewWriter(gz)
	require.NoError(t, zw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "1.log"), nil, 0o640))

	all := logFiles(t, path)
	assert.Equal(t, []string{"0.log.20200101-000000.gz", "0.log.20200101-000002", "0.log"}, all, "what is in use")

	e.clk.Step(10 * time.Second)
	require.NoError(t, r.Rotate(t.Context()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, de := range entries {
		got = append(got, de.Name())
	}
	assert.Equal(t, []string{"0.log", "0.log.20200101-000000.gz", "0.log.20200101-000002.gz",
		"0.log." + e.clk.Now().Format(logs.RotatedTimeFormat), "1.log"}, got)
}

func TestRotateTwiceInASecond(t *testing.T) {
	e := tickerEnv(t)
	id, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000})
	e.clk.Step(10 * time.Second)
	require.NoError(t, r.RotateContainer(t.Context(), id))
	rotated := path + "." + e.clk.Now().Format(logs.RotatedTimeFormat)
	require.Equal(t, 11, readLines(t, rotated))
	// The live log fills up again within the same second.
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("2026-03-01T12:00:10Z stdout F "+tickLine+"\n", 10)), 0o640))
	err := r.RotateContainer(t.Context(), id)
	require.ErrorContains(t, err, "already exists")
	assert.Equal(t, 11, readLines(t, rotated), "the first rotation is not overwritten")
	assert.Equal(t, 10, readLines(t, path))
	e.clk.Step(time.Second)
	require.NoError(t, r.RotateContainer(t.Context(), id))
}

func TestRotateMissingLog(t *testing.T) {
	e := tickerEnv(t)
	id, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{})
	require.NoError(t, os.Remove(path))
	require.NoError(t, r.RotateContainer(t.Context(), id))
	assert.Len(t, e.rt.CallsOf(fake.ReopenContainerLog), 1)
	assert.FileExists(t, path, "reopened")

	e.rt.InjectFault(fake.ReopenContainerLog, fake.Fault{Err: cri.ErrFailedPrecondition})
	require.NoError(t, os.Remove(path))
	err := r.RotateContainer(t.Context(), id)
	require.ErrorIs(t, err, cri.ErrFailedPrecondition)
	assert.ErrorContains(t, err, "doesn't exist, reopen container log failed")

	err = r.RotateContainer(t.Context(), "nope")
	require.ErrorIs(t, err, cri.ErrNotFound)
	assert.ErrorContains(t, err, "failed to get container status")
}

// pathRuntime reports the log path it is given for every container.
type pathRuntime struct {
	*fake.Runtime
	path string
}

func (p pathRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, LogPath: p.path}}, nil
}

func TestRotateLogPaths(t *testing.T) {
	e := tickerEnv(t)
	id, _ := e.start("ticker")
	for _, tc := range []struct {
		path string
		err  string
	}{
		{path: ""},
		{path: "relative/0.log", err: "not an absolute clean path"},
		{path: "/var/log/pods/../../etc/passwd", err: "not an absolute clean path"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r, err := logs.NewRotator(logs.RotatorOptions{Runtime: pathRuntime{e.rt, tc.path}})
			require.NoError(t, err)
			for _, err := range []error{r.RotateContainer(t.Context(), id), r.Clean(t.Context(), id)} {
				if tc.err == "" {
					assert.NoError(t, err)
				} else {
					assert.ErrorContains(t, err, tc.err)
				}
			}
		})
	}
}

func TestClean(t *testing.T) {
	e := tickerEnv(t)
	id, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000})
	for range 3 {
		e.clk.Step(10 * time.Second)
		require.NoError(t, r.Rotate(t.Context()))
	}
	other := filepath.Join(filepath.Dir(path), "1.log")
	require.NoError(t, os.WriteFile(other, nil, 0o640))
	all := logFiles(t, path)
	require.Len(t, all, 4)

	require.NoError(t, r.Clean(t.Context(), id))
	for _, p := range all {
		assert.NoFileExists(t, filepath.Join(filepath.Dir(path), p))
	}
	assert.FileExists(t, other, "another container's log stays")
	require.NoError(t, r.Clean(t.Context(), id), "cleaning twice")
	require.ErrorIs(t, r.Clean(t.Context(), "nope"), cri.ErrNotFound)
}

func TestNewRotator(t *testing.T) {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	for _, tc := range []struct {
		name string
		o    logs.RotatorOptions
		err  string
	}{
		{name: "defaults", o: logs.RotatorOptions{Runtime: rt}},
		{name: "no runtime", o: logs.RotatorOptions{}, err: "missing runtime"},
		{name: "one file", o: logs.RotatorOptions{Runtime: rt, MaxFiles: 1}, err: "invalid MaxFiles 1, must be > 1"},
		{name: "negative files", o: logs.RotatorOptions{Runtime: rt, MaxFiles: -3}, err: "invalid MaxFiles -3"},
		{name: "negative interval", o: logs.RotatorOptions{Runtime: rt, Interval: -time.Second}, err: "negative Interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := logs.NewRotator(tc.o)
			if tc.err == "" {
				require.NoError(t, err)
				require.NotNil(t, r)
				return
			}
			require.ErrorIs(t, err, logs.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

func TestRotatorRun(t *testing.T) {
	e := tickerEnv(t)
	_, path := e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000, Interval: 30 * time.Second})
	e.clk.Step(10 * time.Second)
	// The container's log timer waits on the clock too: Run is waiting once
	// there is one waiter more than the container's alone.
	waitFor(t, "the container's log timer", e.clk.HasWaiters)
	others := e.clk.Waiters()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	rotations := func() int { return len(e.rt.CallsOf(fake.ReopenContainerLog)) }
	waitFor(t, "the first round, at once", func() bool { return rotations() == 1 })
	waitFor(t, "Run to wait", func() bool { return e.clk.Waiters() > others })
	e.clk.Step(29 * time.Second) // the ticker fills the log meanwhile
	assert.Equal(t, 1, rotations(), "not before Interval")
	e.clk.Step(time.Second)
	// The round is over once the runtime has reopened the log: the call is
	// recorded as it starts, and cancelling Run before it ends would undo
	// the rotation (the rotated file is put back when the reopen fails).
	waitFor(t, "the second round", func() bool {
		_, err := os.Stat(path)
		return rotations() == 2 && err == nil
	})
	require.EqualError(t, r.Run(ctx), "logs: rotator: Run called more than once")
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, []string{"0.log.20260301-120010.gz", "0.log.20260301-120040", "0.log"}, logFiles(t, path))
}

func TestRotatorRunLogsFailures(t *testing.T) {
	e := tickerEnv(t)
	e.start("ticker")
	r := newRotator(t, e, logs.RotatorOptions{MaxSize: 1000})
	e.rt.InjectFault(fake.ListContainers, fake.Fault{Err: errors.New("boom")})
	err := r.Rotate(t.Context())
	require.ErrorContains(t, err, "failed to list containers")
}
