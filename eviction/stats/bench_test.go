//go:build linux

package stats_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// BenchmarkLinuxPodVolumes measures one Get of n pods, each with an
// emptyDir of 10 files, on the fake runtime: walking every volume at every
// Get (VolumeStatsPeriod < 0) against the default, which walks a pod's
// volumes once per minute or two and reports the last walk in between.
func BenchmarkLinuxPodVolumes(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		ctx := context.Background()
		clk := clocktesting.NewFakeClock(t0)
		rt := fake.New(fake.Options{Clock: clk})
		rootDir := b.TempDir()
		for i := range n {
			uid := fmt.Sprintf("uid-%d", i)
			sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%d", i), Namespace: "default", Uid: uid}}
			if _, err := rt.RunPodSandbox(ctx, sb, ""); err != nil {
				b.Fatal(err)
			}
			vol := filepath.Join(rootDir, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache")
			if err := os.MkdirAll(vol, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 10 {
				if err := os.WriteFile(filepath.Join(vol, fmt.Sprint(f)), make([]byte, 4096), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, tc := range []struct {
			name   string
			period time.Duration
		}{{"every-get", -1}, {"default", 0}} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, tc.name), func(b *testing.B) {
				p, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, ProcRoot: "testdata/v2/proc", CgroupRoot: "testdata/v2/cgroup",
					RootDir: rootDir, PodLogsDir: b.TempDir(), Clock: clk, VolumeStatsPeriod: tc.period})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Get(ctx); err != nil { // the first walk
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := p.Get(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		rt.Close()
	}
}
