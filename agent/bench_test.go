package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
)

// BenchmarkLoad writes N pod manifests at once into the manifest directory of
// an agent on the embedded fake runtime, with upstream's default periods, and
// measures the time until every pod is Running and Ready, the per-pod
// latency from ADD to Ready (p50, p99), and the process's peak RSS
// (getrusage; it includes the test binary and the fake runtime, so it is an
// upper bound of the agent's). KK_BENCH_DIR puts the manifests and the root
// dir on another filesystem; KK_DEBUG=1 logs.
func BenchmarkLoad(b *testing.B) {
	for _, evented := range []bool{false, true} {
		for _, n := range []int{100, 1000} {
			name := fmt.Sprintf("pleg=relist/pods=%d", n)
			if evented {
				name = fmt.Sprintf("pleg=evented/pods=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchLoad(b, n, evented) })
		}
	}
}

func benchLoad(b *testing.B, n int, evented bool) {
	b.ReportAllocs()
	var all, p50, p99 []time.Duration
	for b.Loop() {
		a, p5, p9 := loadOnce(b, n, evented)
		b.Logf("iteration: all-ready %s p50 %s p99 %s", a, p5, p9)
		all, p50, p99 = append(all, a), append(p50, p5), append(p99, p9)
	}
	b.ReportMetric(float64(median(all).Milliseconds()), "all-ready-ms")
	b.ReportMetric(float64(median(p50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(median(p99).Milliseconds()), "p99-ms")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
	}
}

func loadOnce(b *testing.B, n int, evented bool) (all, p50, p99 time.Duration) {
	dir := b.TempDir()
	if base := os.Getenv("KK_BENCH_DIR"); base != "" {
		// Another filesystem for the manifests and the root dir (a
		// tmpfs, say), to tell the agent's cost from the disk's.
		var err error
		if dir, err = os.MkdirTemp(base, "load-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o750); err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(agent.Options{NodeName: "node1", RootDir: filepath.Join(dir, "root"), EventedPLEG: evented, Logger: benchLogger(),
		Node: agent.NodeOptions{HostIPs: []string{"192.0.2.10"}}, Sources: agent.SourceOptions{ManifestPath: manifests}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	<-a.Ready()
	start := time.Now()
	for i := range n {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: load-%d}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, \"3600\"]}\n", i)
		if err := os.WriteFile(filepath.Join(manifests, fmt.Sprintf("load-%d.yaml", i)), []byte(m), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	deadline := start.Add(2 * time.Minute)
	for {
		lat := a.ReadyLatencies()
		if len(lat) == n {
			all = time.Since(start)
			ds := make([]time.Duration, 0, n)
			for _, d := range lat {
				ds = append(ds, d)
			}
			slices.Sort(ds)
			return all, ds[n/2], ds[(n*99)/100]
		}
		if time.Now().After(deadline) {
			ready := 0
			for _, p := range a.PodStatuses() {
				if p.Status.Phase == v1.PodRunning {
					ready++
				}
			}
			b.Fatalf("%d of %d pods Ready after 2m (%d Running)", len(lat), n, ready)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchLogger() *slog.Logger {
	if os.Getenv("KK_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
