package logs_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// writeLogFile writes lines, each followed by a newline, to a new file.
func writeLogFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

// sample is a log with a line split into two partial entries (line 3)
// and both streams.
var sample = []string{
	"2024-01-01T00:00:01Z stdout F one",
	"2024-01-01T00:00:02Z stderr F two",
	"2024-01-01T00:00:03Z stdout P thr",
	"2024-01-01T00:00:03.5Z stdout F ee",
	"2024-01-01T00:00:04.25Z stdout F four",
}

func at(sec float64) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(sec * float64(time.Second)))
}

func TestReadLogs(t *testing.T) {
	path := writeLogFile(t, sample...)
	for _, tc := range []struct {
		name           string
		opts           logs.Options
		all            string // stdout and stderr to one writer
		stdout, stderr string // to two writers
	}{
		{name: "everything", all: "one\ntwo\nthree\nfour\n", stdout: "one\nthree\nfour\n", stderr: "two\n"},
		{name: "timestamps once per line", opts: logs.Options{Timestamps: true},
			all: "2024-01-01T00:00:01.000000000Z one\n2024-01-01T00:00:02.000000000Z two\n" +
				"2024-01-01T00:00:03.000000000Z three\n2024-01-01T00:00:04.250000000Z four\n"},
		{name: "tail 0", opts: logs.Options{TailLines: ptr.To[int64](0)}, all: ""},
		{name: "tail 1", opts: logs.Options{TailLines: ptr.To[int64](1)}, all: "four\n"},
		{name: "tail 2 counts the split line once", opts: logs.Options{TailLines: ptr.To[int64](2)}, all: "three\nfour\n"},
		{name: "tail 3", opts: logs.Options{TailLines: ptr.To[int64](3)}, all: "two\nthree\nfour\n", stdout: "three\nfour\n", stderr: "two\n"},
		{name: "tail more than there is", opts: logs.Options{TailLines: ptr.To[int64](10)}, all: "one\ntwo\nthree\nfour\n"},
		{name: "negative tail is all", opts: logs.Options{TailLines: ptr.To[int64](-1)}, all: "one\ntwo\nthree\nfour\n"},
		{name: "since includes its instant", opts: logs.Options{SinceTime: at(2)}, all: "two\nthree\nfour\n"},
		{name: "since judges a line by its first entry", opts: logs.Options{SinceTime: at(3.2)}, all: "four\n"},
		{name: "since after all", opts: logs.Options{SinceTime: at(5)}, all: ""},
		{name: "limit cuts a line", opts: logs.Options{LimitBytes: ptr.To[int64](6)}, all: "one\ntw"},
		{name: "limit inside a split line", opts: logs.Options{LimitBytes: ptr.To[int64](10)}, all: "one\ntwo\nth"},
		{name: "limit counts timestamps", opts: logs.Options{LimitBytes: ptr.To[int64](40), Timestamps: true},
			all: "2024-01-01T00:00:01.000000000Z one\n2024-"},
		{name: "limit larger than the log", opts: logs.Options{LimitBytes: ptr.To[int64](1000)}, all: "one\ntwo\nthree\nfour\n"},
		{name: "tail and since", opts: logs.Options{TailLines: ptr.To[int64](3), SinceTime: at(2.5)}, all: "three\nfour\n"},
		{name: "tail, timestamps and limit", opts: logs.Options{TailLines: ptr.To[int64](2), Timestamps: true, LimitBytes: ptr.To[int64](38)},
			all: "2024-01-01T00:00:03.000000000Z three\n2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all bytes.Buffer
			require.NoError(t, logs.ReadLogs(t.Context(), path, "", &tc.opts, nil, &all, &all))
			assert.Equal(t, tc.all, all.String())
			if tc.stdout == "" && tc.stderr == "" {
				return
			}
			var stdout, stderr bytes.Buffer
			require.NoError(t, logs.ReadLogs(t.Context(), path, "", &tc.opts, nil, &stdout, &stderr))
			assert.Equal(t, tc.stdout, stdout.String())
			assert.Equal(t, tc.stderr, stderr.String())
		})
	}
}

func TestReadLogsOneStream(t *testing.T) {
	path := writeLogFile(t, sample...)
	var stdout, stderr bytes.Buffer
	// The stream not asked for is neither written nor counted.
	require.NoError(t, logs.ReadLogs(t.Context(), path, "", &logs.Options{LimitBytes: ptr.To[int64](8)}, nil, &stdout, nil))
	assert.Equal(t, "one\nthre", stdout.String())
	require.NoError(t, logs.ReadLogs(t.Context(), path, "", nil, nil, nil, &stderr))
	assert.Equal(t, "two\n", stderr.String())
}

func TestReadLogsLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string // the whole file
		opts    logs.Options
		want    string
		logged  int // malformed lines
		err     string
	}{
		{name: "malformed lines skipped",
			content: "2024-01-01T00:00:01Z stdout F one\ngarbage\n2024-01-01T00:00:02Z stdin F x\n2024-01-01T00:00:03Z stdout F two\n",
			want:    "one\ntwo\n", logged: 2},
		{name: "malformed lines count for tail",
			content: "2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stdout F two\ngarbage\n",
			opts:    logs.Options{TailLines: ptr.To[int64](2)}, want: "two\n", logged: 1},
		{name: "first line in no format", content: "garbage\n2024-01-01T00:00:01Z stdout F one\n",
			err: `failed to get parse function: unsupported log format: "garbage"`},
		{name: "empty file", content: "", want: ""},
		{name: "empty content", content: "2024-01-01T00:00:01Z stdout F \n2024-01-01T00:00:02Z stdout F x\n", want: "\nx\n"},
		{name: "CRLF keeps the carriage return", content: "2024-01-01T00:00:01Z stdout F a\r\n2024-01-01T00:00:02Z stdout P b\r\n2024-01-01T00:00:02Z stdout F c\r\n",
			want: "a\r\nb\rc\r\n"},
		{name: "unterminated last line printed as is", content: "2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stdout F tw",
			want: "one\ntw"},
		{name: "unterminated last line not counted by tail", content: "2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stdout F tw",
			opts: logs.Options{TailLines: ptr.To[int64](1)}, want: "one\n"},
		{name: "a line still being written is not a tail line",
			content: "2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stdout P tw\n",
			opts:    logs.Options{TailLines: ptr.To[int64](1)}, want: "one\n"},
		{name: "streams joined apart",
			content: "2024-01-01T00:00:01Z stdout P o\n2024-01-01T00:00:01Z stderr P e\n2024-01-01T00:00:02Z stderr F rr\n2024-01-01T00:00:02Z stdout F ut\n",
			opts:    logs.Options{Timestamps: true},
			want:    "2024-01-01T00:00:01.000000000Z o2024-01-01T00:00:01.000000000Z err\nut\n"},
		{name: "docker json",
			content: `{"log":"one\n","stream":"stdout","time":"2024-01-01T00:00:01Z"}` + "\n" +
				`{"log":"t","stream":"stderr","time":"2024-01-01T00:00:02Z"}` + "\n" +
				`{"log":"wo\n","stream":"stderr","time":"2024-01-01T00:00:02Z"}` + "\n" +
				`{"log":"three\n","stream":"stdout","time":"2024-01-01T00:00:03Z"}` + "\n",
			opts: logs.Options{TailLines: ptr.To[int64](2), Timestamps: true},
			want: "2024-01-01T00:00:02.000000000Z two\n2024-01-01T00:00:03.000000000Z three\n"},
		{name: "time zones printed as written",
			content: "2024-01-01T02:00:01+02:00 stdout F one\n",
			opts:    logs.Options{Timestamps: true}, want: "2024-01-01T02:00:01.000000000+02:00 one\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			var out, logged bytes.Buffer
			tc.opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			err := logs.ReadLogs(t.Context(), path, "", &tc.opts, nil, &out, &out)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.String())
			assert.Equal(t, tc.logged, strings.Count(logged.String(), "Failed when parsing line"), "%s", logged.String())
			assert.NotContains(t, logged.String(), "garbage", "a line's content is never logged")
		})
	}
}

func TestReadLogsFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.log")
	err := logs.ReadLogs(t.Context(), missing, "", nil, nil, io.Discard, io.Discard)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), `failed to try resolving symlinks in path "`+missing+`"`)

	err = logs.ReadLogs(t.Context(), "", "", nil, nil, io.Discard, io.Discard)
	require.Error(t, err, "an empty path is no log")

	// A symbolic link (docker's legacy container log link) is read
	// through.
	path := writeLogFile(t, sample...)
	link := filepath.Join(dir, "link.log")
	require.NoError(t, os.Symlink(path, link))
	var out bytes.Buffer
	require.NoError(t, logs.ReadLogs(t.Context(), link, "", &logs.Options{TailLines: ptr.To[int64](1)}, nil, &out, &out))
	assert.Equal(t, "four\n", out.String())

	err = logs.ReadLogs(t.Context(), path, "", &logs.Options{Follow: true}, nil, &out, &out)
	require.Error(t, err, "following needs a container and a runtime")
}

func TestReadLogsWriterErrors(t *testing.T) {
	path := writeLogFile(t, sample...)
	boom := failingWriter{}
	err := logs.ReadLogs(t.Context(), path, "", nil, nil, boom, boom)
	require.ErrorIs(t, err, errBoom)
	err = logs.ReadLogs(t.Context(), path, "", nil, nil, shortWriter{}, io.Discard)
	require.ErrorContains(t, err, "short write")
}

func TestReadLogsLongLines(t *testing.T) {
	// Lines longer than the read buffer, split by the runtime or not.
	long := strings.Repeat("0123456789", 20000)
	path := writeLogFile(t,
		"2024-01-01T00:00:01Z stdout F "+long,
		"2024-01-01T00:00:02Z stdout P "+long[:16384],
		"2024-01-01T00:00:02Z stdout F "+long[16384:],
		"2024-01-01T00:00:03Z stdout F short",
	)
	var out bytes.Buffer
	require.NoError(t, logs.ReadLogs(t.Context(), path, "", nil, nil, &out, &out))
	assert.Equal(t, long+"\n"+long+"\nshort\n", out.String())
	out.Reset()
	require.NoError(t, logs.ReadLogs(t.Context(), path, "", &logs.Options{TailLines: ptr.To[int64](2)}, nil, &out, &out))
	assert.Equal(t, long+"\nshort\n", out.String())
}

func TestReadLogsCancelled(t *testing.T) {
	var lines []string
	for range 10000 {
		lines = append(lines, "2024-01-01T00:00:01Z stdout F x")
	}
	path := writeLogFile(t, lines...)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	err := logs.ReadLogs(ctx, path, "", nil, nil, &out, &out)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, out.Len(), 10000*2, "a cancelled read stops early")
}

func TestNewOptions(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   *v1.PodLogOptions
		want logs.Options
	}{
		{name: "nil"},
		{name: "plain", in: &v1.PodLogOptions{Follow: true, Timestamps: true, TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](7)},
			want: logs.Options{Follow: true, Timestamps: true, TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](7)}},
		{name: "since seconds", in: &v1.PodLogOptions{SinceSeconds: ptr.To[int64](60)},
			want: logs.Options{SinceTime: now.Add(-time.Minute)}},
		{name: "since time", in: &v1.PodLogOptions{SinceTime: &metav1.Time{Time: now.Add(-time.Hour)}},
			want: logs.Options{SinceTime: now.Add(-time.Hour)}},
		{name: "the later of the two", in: &v1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: &metav1.Time{Time: now.Add(-time.Hour)}},
			want: logs.Options{SinceTime: now.Add(-time.Minute)}},
		{name: "the later of the two, other way", in: &v1.PodLogOptions{SinceSeconds: ptr.To[int64](7200), SinceTime: &metav1.Time{Time: now.Add(-time.Hour)}},
			want: logs.Options{SinceTime: now.Add(-time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := logs.NewOptions(tc.in, now)
			assert.Equal(t, &tc.want, got)
			if tc.in != nil && tc.in.TailLines != nil {
				*tc.in.TailLines = 99
				assert.Equal(t, int64(5), *got.TailLines, "no aliasing of the request")
			}
		})
	}
}

var errBoom = io.ErrClosedPipe

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errBoom }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }
