package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/server"
)

// summaryOf makes a node's summary with pods pods of two containers each,
// every figure filled in as a kubelet on cgroup v2 fills it.
func summaryOf(pods int) *statsv1alpha1.Summary {
	now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	cpu := func(n uint64) *statsv1alpha1.CPUStats {
		return &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: ptr.To(n), UsageCoreNanoSeconds: ptr.To(n * 1000)}
	}
	mem := func(n uint64) *statsv1alpha1.MemoryStats {
		return &statsv1alpha1.MemoryStats{Time: now, AvailableBytes: ptr.To(n * 4), UsageBytes: ptr.To(n), WorkingSetBytes: ptr.To(n / 2),
			RSSBytes: ptr.To(n / 3), PageFaults: ptr.To[uint64](1200), MajorPageFaults: ptr.To[uint64](3)}
	}
	fs := func(n uint64) *statsv1alpha1.FsStats {
		return &statsv1alpha1.FsStats{Time: now, AvailableBytes: ptr.To(n * 10), CapacityBytes: ptr.To(n * 20), UsedBytes: ptr.To(n),
			InodesFree: ptr.To[uint64](100000), Inodes: ptr.To[uint64](200000), InodesUsed: ptr.To[uint64](12)}
	}
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{
		NodeName: "node1", StartTime: now, CPU: cpu(2_000_000_000), Memory: mem(8 << 30), Fs: fs(50 << 30),
		Runtime: &statsv1alpha1.RuntimeStats{ImageFs: fs(20 << 30)},
		Rlimit:  &statsv1alpha1.RlimitStats{Time: now, MaxPID: ptr.To[int64](4194304), NumOfRunningProcesses: ptr.To[int64](300)},
		SystemContainers: []statsv1alpha1.ContainerStats{
			{Name: "kubelet", StartTime: now, CPU: cpu(50_000_000), Memory: mem(100 << 20)},
			{Name: "runtime", StartTime: now, CPU: cpu(30_000_000), Memory: mem(80 << 20)},
			{Name: "pods", StartTime: now, CPU: cpu(1_000_000_000), Memory: mem(4 << 30)},
		},
	}}
	for i := range pods {
		p := statsv1alpha1.PodStats{
			PodRef:    statsv1alpha1.PodReference{Name: fmt.Sprintf("pod-%03d", i), Namespace: "default", UID: fmt.Sprintf("uid-%03d", i)},
			StartTime: now, CPU: cpu(10_000_000), Memory: mem(64 << 20),
			Network: &statsv1alpha1.NetworkStats{Time: now, InterfaceStats: statsv1alpha1.InterfaceStats{Name: "eth0",
				RxBytes: ptr.To[uint64](1 << 20), TxBytes: ptr.To[uint64](2 << 20), RxErrors: ptr.To[uint64](0), TxErrors: ptr.To[uint64](0)}},
			VolumeStats:      []statsv1alpha1.VolumeStats{{Name: "kube-api-access", FsStats: *fs(4096)}},
			EphemeralStorage: fs(1 << 20),
			ProcessStats:     &statsv1alpha1.ProcessStats{ProcessCount: ptr.To[uint64](4)},
		}
		for _, c := range []string{"app", "sidecar"} {
			p.Containers = append(p.Containers, statsv1alpha1.ContainerStats{Name: c, StartTime: now, CPU: cpu(5_000_000),
				Memory: mem(32 << 20), Rootfs: fs(1 << 20), Logs: fs(4096)})
		}
		s.Pods = append(s.Pods, p)
	}
	return s
}

// BenchmarkSummary110 is /stats/summary of a full node (110 pods, the
// default maximum, of two containers each) from request to encoded
// response: the server's share of a metrics-server scrape.
func BenchmarkSummary110(b *testing.B) {
	summary := summaryOf(110)
	n := newFakeNode()
	n.summary = func(bool) (*statsv1alpha1.Summary, error) { return summary, nil }
	srv := server.New(server.Options{Stats: n})
	req := httptest.NewRequest(http.MethodGet, "/stats/summary", nil).WithContext(context.Background())
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/response")
}
