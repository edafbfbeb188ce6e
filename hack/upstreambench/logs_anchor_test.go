package upstreambench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// logsBase is a CRI log of five lines on both streams, one of them with a
// timestamp in another zone and fewer digits (12:00:03.5Z).
const logsBase = `2026-03-01T12:00:00.000000001Z stdout F one
2026-03-01T12:00:01Z stderr F two
2026-03-01T12:00:02.000000000Z stdout F three
2026-03-01T14:00:03.5+02:00 stdout F four
2026-03-01T12:00:04.000000000Z stderr F five
`

// logsOut is what a reader wrote to each stream and how it ended.
type logsOut struct {
	stdout, stderr string
	err            string
}

func at(s string) *metav1.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &metav1.Time{Time: t}
}

func ptr[T any](v T) *T { return &v }

// benchTail returns the content of the last n complete lines of a file
// made by logFile, as both readers print them.
func benchTail(t *testing.T, path string, n int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data[:bytes.LastIndexByte(data, '\n')+1]), "\n")
	lines = lines[len(lines)-1-n : len(lines)-1]
	var b strings.Builder
	for _, l := range lines {
		_, content, ok := strings.Cut(l, " stdout F ")
		require.True(t, ok, "line %q", l)
		b.WriteString(content)
	}
	return b.String()
}

// TestLogsReadSame: upstream's reader and cri/logs write the same bytes for
// the same file and options, except where docs/logs.md says they differ
// on purpose; those cases pin both sides (upstream's in wantUpstream).
func TestLogsReadSame(t *testing.T) {
	now := at("2026-03-01T12:00:05Z").Time
	bench := logFile(t, 1<<20)
	tests := []struct {
		name string
		file string // the log's content; empty: the benchmarks' 1 MiB file
		opts v1.PodLogOptions
		// stdoutOnly drops stderr, as a request for stream=Stdout does.
		stdoutOnly   bool
		want         logsOut
		wantUpstream *logsOut // nil: the same as want
	}{
		{name: "all", file: logsBase, want: logsOut{stdout: "one\nthree\nfour\n", stderr: "two\nfive\n"}},
		{name: "tail=0", file: logsBase, opts: v1.PodLogOptions{TailLines: ptr[int64](0)}},
		{name: "tail=2", file: logsBase, opts: v1.PodLogOptions{TailLines: ptr[int64](2)},
			want: logsOut{stdout: "four\n", stderr: "five\n"}},
		{name: "tail beyond the file", file: logsBase, opts: v1.PodLogOptions{TailLines: ptr[int64](10)},
			want: logsOut{stdout: "one\nthree\nfour\n", stderr: "two\nfive\n"}},
		{name: "since a line's own time", file: logsBase, opts: v1.PodLogOptions{SinceTime: at("2026-03-01T12:00:02Z")},
			want: logsOut{stdout: "three\nfour\n", stderr: "five\n"}},
		{name: "since and tail", file: logsBase, opts: v1.PodLogOptions{SinceTime: at("2026-03-01T12:00:02Z"), TailLines: ptr[int64](4)},
			want: logsOut{stdout: "three\nfour\n", stderr: "five\n"}},
		{name: "sinceSeconds", file: logsBase, opts: v1.PodLogOptions{SinceSeconds: ptr[int64](2)},
			want: logsOut{stdout: "four\n", stderr: "five\n"}},
		{name: "timestamps", file: logsBase, opts: v1.PodLogOptions{Timestamps: true, TailLines: ptr[int64](2)},
			want: logsOut{stdout: "2026-03-01T14:00:03.500000000+02:00 four\n", stderr: "2026-03-01T12:00:04.000000000Z five\n"}},
		{name: "limit cuts a line", file: logsBase, opts: v1.PodLogOptions{LimitBytes: ptr[int64](7)},
			want: logsOut{stdout: "one\n", stderr: "two"}},
		{name: "limit with timestamps", file: logsBase, opts: v1.PodLogOptions{Timestamps: true, LimitBytes: ptr[int64](40)},
			want: logsOut{stdout: "2026-03-01T12:00:00.000000001Z one\n", stderr: "2026-"}},
		{name: "limit counts the stream asked for", file: logsBase, stdoutOnly: true, opts: v1.PodLogOptions{LimitBytes: ptr[int64](9)},
			want: logsOut{stdout: "one\nthree"}},
		{name: "unterminated last line", file: logsBase + "2026-03-01T12:00:05Z stdout F six",
			want: logsOut{stdout: "one\nthree\nfour\nsix", stderr: "two\nfive\n"}},
		{name: "tail does not count an unterminated last line", file: logsBase + "2026-03-01T12:00:05Z stdout F six",
			opts: v1.PodLogOptions{TailLines: ptr[int64](1)}, want: logsOut{stderr: "five\n"}},
		{name: "docker json-file", file: `{"log":"one\n","stream":"stdout","time":"2026-03-01T12:00:00Z"}
{"log":"two\n","stream":"stderr","time":"2026-03-01T12:00:01Z"}
`, opts: v1.PodLogOptions{Timestamps: true}, want: logsOut{stdout: "2026-03-01T12:00:00.000000000Z one\n", stderr: "2026-03-01T12:00:01.000000000Z two\n"}},
		// The message quotes the line without its newline here; upstream's
		// quotes the newline too.
		{name: "unknown format", file: "hello\n", want: logsOut{err: `failed to get parse function: unsupported log format: "hello"`},
			wantUpstream: &logsOut{err: `failed to get parse function: unsupported log format: "hello\n"`}},
		{name: "benchmark file tail=100", opts: v1.PodLogOptions{TailLines: ptr[int64](100)},
			want: logsOut{stdout: benchTail(t, bench, 100)}},

		// The differences docs/logs.md lists. A line split into partial
		// entries is one line for tail here; upstream counts each entry.
		{name: "tail=1 of a split line", file: logsBase + `2026-03-01T12:00:05Z stdout P aaa
2026-03-01T12:00:06Z stdout P bbb
2026-03-01T12:00:07Z stdout F ccc
`, opts: v1.PodLogOptions{TailLines: ptr[int64](1)},
			want: logsOut{stdout: "aaabbbccc\n"}, wantUpstream: &logsOut{stdout: "ccc\n"}},
		// ... and in or out whole by its first entry's time for since;
		// upstream filters each entry.
		{name: "since in the middle of a split line", file: `2026-03-01T12:00:05Z stdout P aaa
2026-03-01T12:00:06Z stdout P bbb
2026-03-01T12:00:07Z stdout F ccc
2026-03-01T12:00:08Z stdout F ddd
`, opts: v1.PodLogOptions{SinceTime: at("2026-03-01T12:00:06Z")},
			want: logsOut{stdout: "ddd\n"}, wantUpstream: &logsOut{stdout: "bbbccc\nddd\n"}},
		// The streams are joined apart; upstream joins a partial stdout
		// entry with the next entry whatever its stream, and so prints no
		// timestamp for the stderr line.
		{name: "a stderr line inside a split stdout line", file: `2026-03-01T12:00:05Z stdout P out-
2026-03-01T12:00:06Z stderr F err
2026-03-01T12:00:07Z stdout F end
`, opts: v1.PodLogOptions{Timestamps: true},
			want:         logsOut{stdout: "2026-03-01T12:00:05.000000000Z out-end\n", stderr: "2026-03-01T12:00:06.000000000Z err\n"},
			wantUpstream: &logsOut{stdout: "2026-03-01T12:00:05.000000000Z out-2026-03-01T12:00:07.000000000Z end\n", stderr: "err\n"}},
	}
	for _, tt := range tests {
		path := bench
		if tt.file != "" {
			path = filepath.Join(t.TempDir(), "0.log")
			require.NoError(t, os.WriteFile(path, []byte(tt.file), 0o600))
		}
		for _, r := range logReaders {
			t.Run(r.name+"/"+tt.name, func(t *testing.T) {
				want := tt.want
				if r.name == "upstream" && tt.wantUpstream != nil {
					want = *tt.wantUpstream
				}
				var stdout, stderr bytes.Buffer
				var errw io.Writer = &stderr
				if tt.stdoutOnly {
					errw = nil
				}
				opts := tt.opts
				err := r.read(context.Background(), path, "", &opts, now, &logRuntime{}, &stdout, errw)
				got := logsOut{stdout: stdout.String(), stderr: stderr.String()}
				if err != nil {
					got.err = err.Error()
				}
				assert.Equal(t, want, got)
			})
		}
	}
}

// syncBuffer is a bytes.Buffer for a follower's goroutine and the test's;
// each write wakes a waiter.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{written: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.written <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer holds want, failing the test after 10s.
func (b *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for b.String() != want {
		select {
		case <-b.written:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %q, got %q", want, b.String())
		}
	}
}

// TestLogsFollowSame: both followers print the last lines of the file,
// then what is appended (a split line joined), and end without error once
// the container has exited and the file is read; a cancelled context ends
// them with different errors (upstream's is a plain "context cancelled").
func TestLogsFollowSame(t *testing.T) {
	const appended = `2026-03-01T12:00:05Z stdout F six
2026-03-01T12:00:06Z stdout P sev
2026-03-01T12:00:06Z stdout F en
`
	wantStdout := "2026-03-01T14:00:03.500000000+02:00 four\n" +
		"2026-03-01T12:00:05.000000000Z six\n" +
		"2026-03-01T12:00:06.000000000Z seven\n"
	wantStderr := "2026-03-01T12:00:04.000000000Z five\n"
	for _, r := range logReaders {
		for _, end := range []string{"exit", "cancel"} {
			t.Run(r.name+"/"+end, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "0.log")
				require.NoError(t, os.WriteFile(path, []byte(logsBase), 0o600))
				rt := &logRuntime{}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stdout, stderr := newSyncBuffer(), newSyncBuffer()
				done := make(chan error, 1)
				go func() {
					opts := &v1.PodLogOptions{Follow: true, TailLines: ptr[int64](2), Timestamps: true}
					done <- r.read(ctx, path, "c1", opts, time.Now(), rt, stdout, stderr)
				}()
				stderr.waitFor(t, wantStderr)
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString(appended)
				require.NoError(t, err)
				require.NoError(t, f.Close())
				stdout.waitFor(t, wantStdout)
				if end == "exit" {
					rt.exited.Store(true)
				} else {
					cancel()
				}
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("the follower did not end")
				}
				switch {
				case end == "exit":
					assert.NoError(t, err)
				case r.name == "upstream":
					assert.EqualError(t, err, "context cancelled")
					assert.False(t, errors.Is(err, context.Canceled))
				default:
					assert.ErrorIs(t, err, context.Canceled)
				}
				assert.Equal(t, wantStdout, stdout.String())
				assert.Equal(t, wantStderr, stderr.String())
			})
		}
	}
}
