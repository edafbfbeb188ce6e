package prometheus_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/examples/prometheus"
)

// summaryFunc is a server.StatsProvider.
type summaryFunc func(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error)

func (f summaryFunc) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	return f(ctx, onlyCPUAndMemory)
}

func u64(v uint64) *uint64 { return &v }

// statsAt is when the test's statistics were taken: 1767225600000 ms.
var statsAt = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func cpu(ns uint64) *statsv1alpha1.CPUStats {
	return &statsv1alpha1.CPUStats{Time: statsAt, UsageCoreNanoSeconds: u64(ns)}
}

func memory(ws uint64) *statsv1alpha1.MemoryStats {
	return &statsv1alpha1.MemoryStats{Time: statsAt, WorkingSetBytes: u64(ws)}
}

// The resource metrics are upstream's, with their labels and each sample
// stamped with its statistic's time; what the summary lacks is left out.
func TestResourceMetrics(t *testing.T) {
	started := metav1.NewTime(time.Date(2025, 12, 31, 23, 0, 0, 500000000, time.UTC))
	for _, tc := range []struct {
		name    string
		summary *statsv1alpha1.Summary
		err     error
		want    string
	}{
		{name: "node, pod and containers", summary: &statsv1alpha1.Summary{
			Node: statsv1alpha1.NodeStats{NodeName: "n1", CPU: cpu(12_500_000_000), Memory: memory(1 << 30),
				Swap: &statsv1alpha1.SwapStats{Time: statsAt, SwapUsageBytes: u64(4096)}},
			Pods: []statsv1alpha1.PodStats{{
				PodRef: statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "u1"},
				CPU:    cpu(2_000_000_000), Memory: memory(300 << 20),
				Swap: &statsv1alpha1.SwapStats{Time: statsAt, SwapUsageBytes: u64(0)},
				Containers: []statsv1alpha1.ContainerStats{
					{Name: "app", StartTime: started, CPU: cpu(1_500_000_000), Memory: memory(200 << 20),
						Swap: &statsv1alpha1.SwapStats{Time: statsAt, SwapUsageBytes: u64(1024), SwapAvailableBytes: u64(3072)}},
					{Name: "sidecar", StartTime: started, CPU: cpu(500_000_000)},
				},
			}},
		}, want: `
# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 1.5 1767225600000
container_cpu_usage_seconds_total{container="sidecar",namespace="default",pod="web"} 0.5 1767225600000
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 2.09715200e+08 1767225600000
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7672220005e+09
container_start_time_seconds{container="sidecar",namespace="default",pod="web"} 1.7672220005e+09
# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems
# TYPE container_swap_limit_bytes gauge
container_swap_limit_bytes{container="app",namespace="default",pod="web"} 4096 1767225600000
# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems
# TYPE container_swap_usage_bytes gauge
container_swap_usage_bytes{container="app",namespace="default",pod="web"} 1024 1767225600000
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12.5 1767225600000
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1.073741824e+09 1767225600000
# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems
# TYPE node_swap_usage_bytes gauge
node_swap_usage_bytes 4096 1767225600000
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 1767225600000
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 3.145728e+08 1767225600000
# HELP pod_swap_usage_bytes [ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems
# TYPE pod_swap_usage_bytes gauge
pod_swap_usage_bytes{namespace="default",pod="web"} 0 1767225600000
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`},
		{name: "missing statistics, a statistic without a time, a container not started", summary: &statsv1alpha1.Summary{
			Node: statsv1alpha1.NodeStats{CPU: &statsv1alpha1.CPUStats{UsageCoreNanoSeconds: u64(1_000_000_000)}, Memory: &statsv1alpha1.MemoryStats{}},
			Pods: []statsv1alpha1.PodStats{{PodRef: statsv1alpha1.PodReference{Name: "new", Namespace: "ns"},
				Containers: []statsv1alpha1.ContainerStats{{Name: "c"}}}},
		}, want: `
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 1
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`},
		{name: "the summary failed", err: errors.New("no cgroups"), want: `
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []bool
			c, err := prometheus.NewResourceCollector(summaryFunc(func(_ context.Context, only bool) (*statsv1alpha1.Summary, error) {
				asked = append(asked, only)
				return tc.summary, tc.err
			}), prometheus.ResourceOptions{})
			require.NoError(t, err)
			reg := prom.NewPedanticRegistry()
			require.NoError(t, reg.Register(c))
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(tc.want)))
			assert.Equal(t, []bool{true}, asked, "one reduced summary (CPU and memory) per scrape")
		})
	}
}

// A summary that does not come within the timeout is a scrape error.
func TestResourceMetricsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := prometheus.NewResourceCollector(summaryFunc(func(ctx context.Context, _ bool) (*statsv1alpha1.Summary, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}), prometheus.ResourceOptions{Timeout: 2 * time.Second})
		require.NoError(t, err)
		start := time.Now()
		assert.Equal(t, 1, testutil.CollectAndCount(c, "resource_scrape_error"))
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, 1.0, testutil.ToFloat64(c))
	})
}

// The handler serves the collector on a registry of its own.
func TestResourceHandler(t *testing.T) {
	h, err := prometheus.NewResourceHandler(summaryFunc(func(context.Context, bool) (*statsv1alpha1.Summary, error) {
		return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{CPU: cpu(3_000_000_000)}}, nil
	}), prometheus.ResourceOptions{})
	require.NoError(t, err)
	code, body := scrape(t, h)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "node_cpu_usage_seconds_total 3 1767225600000\n")
	assert.Contains(t, body, "resource_scrape_error 0\n")
	assert.NotContains(t, body, "kubelet_", "only the resource metrics")

	_, err = prometheus.NewResourceHandler(nil, prometheus.ResourceOptions{})
	assert.ErrorIs(t, err, prometheus.ErrInvalidArgument)
}
