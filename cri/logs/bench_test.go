package logs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// benchFiles are the benchmarks' large log files, made once per process
// in benchDir and removed by TestMain.
var (
	benchMu    sync.Mutex
	benchDir   string
	benchFiles = map[int64]string{}
)

func removeBenchFiles() {
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchDir != "" {
		_ = os.RemoveAll(benchDir)
	}
}

// logBlock returns about size bytes of CRI log lines of 100 bytes or so,
// with the number of lines before it (first) in their content, and the
// bytes a reader prints for them (content and newline).
func logBlock(first, size int) (block []byte, lines, printed int) {
	var b strings.Builder
	for b.Len() < size {
		content := fmt.Sprintf("line %09d %s", first+lines, strings.Repeat("x", 50))
		fmt.Fprintf(&b, "2026-03-01T12:00:00.%09dZ stdout F %s\n", (first+lines)%1e9, content)
		printed += len(content) + 1
		lines++
	}
	return []byte(b.String()), lines, printed
}

// benchFile returns a log file of size bytes, made on first use.
func benchFile(b *testing.B, size int64) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if p, ok := benchFiles[size]; ok {
		return p
	}
	if benchDir == "" {
		dir, err := os.MkdirTemp("", "kk-logs-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
	}
	p := filepath.Join(benchDir, fmt.Sprintf("%d.log", size))
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	block, lines, _ := logBlock(0, 1<<20)
	for written, n := int64(0), 0; written < size; n++ {
		if n > 0 {
			block, _, _ = logBlock(n*lines, 1<<20)
		}
		k, err := f.Write(block[:min(int64(len(block)), size-written)])
		if err != nil {
			b.Fatal(err)
		}
		written += int64(k)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	benchFiles[size] = p
	return p
}

// BenchmarkTail100 reads the last 100 lines of files of growing size: the
// time stays the same, since the file is read backwards from its end.
func BenchmarkTail100(b *testing.B) {
	for _, size := range []int64{1 << 20, 10 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("size=%dMiB", size>>20), func(b *testing.B) {
			path := benchFile(b, size)
			tail := int64(100)
			opts := &logs.Options{TailLines: &tail}
			ctx := context.Background()
			var out countingWriter
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out.n = 0
				if err := logs.ReadLogs(ctx, path, "", opts, nil, &out, &out); err != nil {
					b.Fatal(err)
				}
				if out.n == 0 {
					b.Fatal("nothing read")
				}
			}
		})
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// signalWriter counts the bytes written and wakes whoever waits for a
// count.
type signalWriter struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
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

func (w *signalWriter) waitFor(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.n < n {
		w.cond.Wait()
	}
}

// BenchmarkFollow measures a follower reading what a writer appends: each
// iteration appends 1 MiB of lines and waits until the follower has
// written their content out. Bytes/s are the file's bytes.
func BenchmarkFollow(b *testing.B) {
	path := filepath.Join(b.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	running := logs.ContainerStatusFunc(func(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
		return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
	})
	out := newSignalWriter()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- logs.ReadLogs(ctx, path, "c1", &logs.Options{Follow: true}, running, out, io.Discard)
	}()
	block, _, printed := logBlock(0, 1<<20)
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	want := 0
	for b.Loop() {
		if _, err := f.Write(block); err != nil {
			b.Fatal(err)
		}
		want += printed
		out.waitFor(want)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		b.Fatalf("follower ended with %v", err)
	}
}
