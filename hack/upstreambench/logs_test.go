package upstreambench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	upstreamlogs "k8s.io/cri-client/pkg/logs"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// The anchor for cri/logs' benchmarks: upstream's log reader (cri-client's
// pkg/logs v0.36.3, which kubelet v1.36.3's kuberuntime manager calls for
// `kubectl logs`) and kubeletkit's logs.ReadLogs read the same files, with
// the workload of cri/logs' BenchmarkTail100 and BenchmarkFollow.

// logRuntime is the runtime both followers ask whether the container still
// runs: running until exit is called. It counts the calls. Any other CRI
// call hits the nil embedded interface and panics.
type logRuntime struct {
	internalapi.RuntimeService
	exited atomic.Bool
	calls  atomic.Int64
}

var _ logs.ContainerStatuser = (*logRuntime)(nil)

func (r *logRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.calls.Add(1)
	state := runtimeapi.ContainerState_CONTAINER_RUNNING
	if r.exited.Load() {
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state}}, nil
}

// logReader is one of the two readers, taking the API's options as the
// kubelet gets them from a request.
type logReader struct {
	name string
	read func(ctx context.Context, path, containerID string, o *v1.PodLogOptions, now time.Time, rt *logRuntime, stdout, stderr io.Writer) error
}

var logReaders = []logReader{
	{"upstream", readUpstream},
	{"kubeletkit", readKubeletkit},
}

// readUpstream converts the options as kubelet's kuberuntime manager does
// before it calls cri-client's reader (kuberuntime_logs.go): sinceSeconds
// counts back from now, and a later sinceTime wins.
func readUpstream(ctx context.Context, path, containerID string, o *v1.PodLogOptions, now time.Time, rt *logRuntime, stdout, stderr io.Writer) error {
	opts := &upstreamlogs.LogOptions{
		TailLines:  o.TailLines,
		LimitBytes: o.LimitBytes,
		Follow:     o.Follow,
		Timestamp:  o.Timestamps,
	}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.Since) {
		opts.Since = o.SinceTime.Time
	}
	return upstreamlogs.ReadLogs(ctx, path, containerID, opts, rt, stdout, stderr)
}

func readKubeletkit(ctx context.Context, path, containerID string, o *v1.PodLogOptions, now time.Time, rt *logRuntime, stdout, stderr io.Writer) error {
	return logs.ReadLogs(ctx, path, containerID, logs.NewOptions(o, now), rt, stdout, stderr)
}

// logLines returns about size bytes of CRI log lines of ~106 bytes, the
// lines of cri/logs' benchmarks: stdout, full, numbered from first, with
// the bytes a reader prints for them (content and newline).
func logLines(first, size int) (block []byte, lines, printed int) {
	var b strings.Builder
	b.Grow(size + 128)
	for b.Len() < size {
		n := first + lines
		content := fmt.Sprintf("line %09d %s", n, strings.Repeat("x", 50))
		fmt.Fprintf(&b, "2026-03-01T12:00:00.%09dZ stdout F %s\n", n%1e9, content)
		printed += len(content) + 1
		lines++
	}
	return []byte(b.String()), lines, printed
}

// The tail benchmarks' files, made once per process in logDir and removed
// by TestMain.
var (
	logFilesMu sync.Mutex
	logDir     string
	logFiles   = map[int64]string{}
)

func removeLogFiles() {
	logFilesMu.Lock()
	defer logFilesMu.Unlock()
	if logDir != "" {
		_ = os.RemoveAll(logDir)
	}
}

// logFile returns a log file of exactly size bytes made of 1 MiB blocks of
// logLines, as cri/logs' benchmarks make theirs: the last line is cut, so
// the file ends in an unterminated line.
func logFile(tb testing.TB, size int64) string {
	tb.Helper()
	logFilesMu.Lock()
	defer logFilesMu.Unlock()
	if p, ok := logFiles[size]; ok {
		return p
	}
	if logDir == "" {
		dir, err := os.MkdirTemp("", "kk-upstreambench-logs-")
		if err != nil {
			tb.Fatal(err)
		}
		logDir = dir
	}
	p := filepath.Join(logDir, fmt.Sprintf("%d.log", size))
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	first := 0
	for written := int64(0); written < size; {
		block, lines, _ := logLines(first, 1<<20)
		first += lines
		k, err := f.Write(block[:min(int64(len(block)), size-written)])
		if err != nil {
			tb.Fatal(err)
		}
		written += int64(k)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	logFiles[size] = p
	return p
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// BenchmarkLogTail100 reads the last 100 lines of files of 1, 10 and 100
// MiB, as cri/logs' BenchmarkTail100.
func BenchmarkLogTail100(b *testing.B) {
	for _, r := range logReaders {
		b.Run(r.name, func(b *testing.B) {
			for _, size := range []int64{1 << 20, 10 << 20, 100 << 20} {
				b.Run(fmt.Sprintf("size=%dMiB", size>>20), func(b *testing.B) {
					path := logFile(b, size)
					tail := int64(100)
					o := &v1.PodLogOptions{TailLines: &tail}
					ctx, now := context.Background(), time.Now()
					rt := &logRuntime{}
					var out countingWriter
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						out.n = 0
						if err := r.read(ctx, path, "", o, now, rt, &out, &out); err != nil {
							b.Fatal(err)
						}
						if out.n != 100*66 {
							b.Fatalf("read %d bytes, want 100 lines of 66", out.n)
						}
					}
				})
			}
		})
	}
}

// signalWriter counts the bytes written and wakes whoever waits for a
// count; end wakes them for good.
type signalWriter struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	ended bool
}

func newSignalWriter() *signalWriter {
	w := &signalWriter{}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.n += len(p)
	w.mu.Unlock()
	w.cond.Broadcast()
	return len(p), nil
}

func (w *signalWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.cond.Broadcast()
}

// waitFor waits until n bytes are written and reports whether they were,
// false when the reader ended before.
func (w *signalWriter) waitFor(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.n < n && !w.ended {
		w.cond.Wait()
	}
	return w.n >= n
}

// follow starts r following path on rt, writing stdout to out; the channel
// gets ReadLogs' result, after out has ended.
func follow(r logReader, path string, rt *logRuntime, out *signalWriter) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := r.read(context.Background(), path, "c1", &v1.PodLogOptions{Follow: true}, time.Now(), rt, out, io.Discard)
		out.end()
		done <- err
	}()
	return done
}

// BenchmarkLogFollow measures a follower reading what a writer appends, as
// cri/logs' BenchmarkFollow: each iteration appends 1 MiB of lines and
// waits until the follower has written their content out. Bytes/s are the
// file's bytes; status-calls/op counts the follower's ContainerStatus
// calls. The container exits after the loop, which ends both followers
// with no error (a cancelled context would end them with different
// errors).
func BenchmarkLogFollow(b *testing.B) {
	for _, r := range logReaders {
		b.Run(r.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "0.log")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rt := &logRuntime{}
			out := newSignalWriter()
			done := follow(r, path, rt, out)
			block, _, printed := logLines(0, 1<<20)
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			want := 0
			for b.Loop() {
				if _, err := f.Write(block); err != nil {
					b.Fatal(err)
				}
				want += printed
				if !out.waitFor(want) {
					b.Fatalf("the follower ended before %d bytes: %v", want, <-done)
				}
			}
			b.ReportMetric(float64(rt.calls.Load())/float64(b.N), "status-calls/op")
			rt.exited.Store(true)
			if err := <-done; err != nil {
				b.Fatalf("the follower ended with %v", err)
			}
		})
	}
}
