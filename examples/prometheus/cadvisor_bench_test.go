package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// benchUsage is a full node's usage: pods pods (upstream's default
// maxPods is 110) of two containers each, every figure the CRI can give
// set, as a runtime with sandbox stats reports them.
func benchUsage(pods int) *stats.Usage {
	u := uint64(1 << 20)
	now := metav1.NewTime(time.Unix(1767225600, 0))
	cpu := func() *statsv1alpha1.CPUStats {
		n := uint64(123456789)
		return &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &n}
	}
	mem := func() *statsv1alpha1.MemoryStats {
		return &statsv1alpha1.MemoryStats{Time: now, UsageBytes: &u, WorkingSetBytes: &u, RSSBytes: &u, PageFaults: &u, MajorPageFaults: &u}
	}
	usage := &stats.Usage{}
	for i := range pods {
		name := fmt.Sprintf("pod-%03d", i)
		p := stats.PodUsage{
			Ref:       statsv1alpha1.PodReference{Name: name, Namespace: "default", UID: "uid-" + name},
			SandboxID: fmt.Sprintf("%064x", i),
			CPU:       cpu(), Memory: mem(),
			Network: &statsv1alpha1.NetworkStats{Time: now, Interfaces: []statsv1alpha1.InterfaceStats{
				{Name: "eth0", RxBytes: &u, RxErrors: &u, TxBytes: &u, TxErrors: &u}}},
		}
		for j, c := range []string{"app", "sidecar"} {
			p.Containers = append(p.Containers, stats.ContainerUsage{
				ID: fmt.Sprintf("%062x%02d", i, j), Name: c, Image: "registry.example/app:1.0", CreatedAt: now.Time,
				CPU: cpu(), Memory: mem(), Swap: &statsv1alpha1.SwapStats{Time: now, SwapUsageBytes: &u},
			})
		}
		usage.Pods = append(usage.Pods, p)
	}
	return usage
}

// BenchmarkCadvisorScrape serves /metrics/cadvisor for a node of 110 pods
// (220 containers) from the CRI's figures: the time and the bytes of one
// scrape. Upstream's cAdvisor scrape on the same node is measured by the
// harness, not here (docs/benchmarks.md).
func BenchmarkCadvisorScrape(b *testing.B) {
	usage := benchUsage(110)
	machine := nodetest.Machine{Cap: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("8Gi")}}
	h, err := prometheus.NewCadvisorHandler(prometheus.UsageFunc(func(context.Context) (*stats.Usage, error) { return usage, nil }),
		machine, prometheus.CadvisorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var bytes int
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		bytes = rec.Body.Len()
	}
	b.ReportMetric(float64(bytes), "bytes/scrape")
}
