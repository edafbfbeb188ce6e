package prometheus_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
)

// The agent reports to the Metrics and serves their Handler on /metrics;
// the node's gauges are registered once the agent is built. Here the
// agent is not run: the test records what it would, and scrapes.
func Example() {
	m, err := prometheus.New(prometheus.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(agent.Options{NodeName: "node1", RootDir: "/tmp/prometheus-example", Metrics: m, HTTP: agent.HTTPOptions{MetricsHandler: m.Handler()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.FakeRuntime().Close()
	if err := m.RegisterNode(a); err != nil {
		fmt.Println(err)
		return
	}

	// What the agent's blocks report as pods run.
	m.Event(v1.EventTypeNormal, "Pulled")
	m.Event(v1.EventTypeNormal, "Started")
	m.PodStartDuration(1200 * time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range []string{"kubeletkit_events_total", "kubelet_pod_start_duration_seconds_count", "kubelet_running_pods"} {
			if strings.HasPrefix(line, prefix) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// kubelet_pod_start_duration_seconds_count 1
	// kubelet_running_pods 0
	// kubeletkit_events_total{reason="Pulled",type="Normal"} 1
	// kubeletkit_events_total{reason="Started",type="Normal"} 1
}

// /metrics/resource from the node's stats: what metrics-server scrapes.
func ExampleNewResourceHandler() {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := uint64(1_500_000_000)
	stats := summaryFunc(func(context.Context, bool) (*statsv1alpha1.Summary, error) {
		return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: "node1",
			CPU: &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: &ns}}}, nil
	})
	h, err := prometheus.NewResourceHandler(stats, prometheus.ResourceOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/resource", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if !strings.HasPrefix(line, "#") {
			fmt.Print(line)
		}
	}
	// Output:
	// node_cpu_usage_seconds_total 1.5 1767225600000
	// resource_scrape_error 0
}

// The volume stats of the pods' claims, read from the node's summary at
// every scrape.
func ExampleMetrics_RegisterVolumeStats() {
	m, err := prometheus.New(prometheus.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	capacity, avail, used, inodes, free, inodesUsed := uint64(10<<30), uint64(7<<30), uint64(3<<30), uint64(1000), uint64(900), uint64(100)
	stats := summaryFunc(func(context.Context, bool) (*statsv1alpha1.Summary, error) {
		return &statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{{
			PodRef: statsv1alpha1.PodReference{Name: "db-0", Namespace: "db"},
			VolumeStats: []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: &statsv1alpha1.PVCReference{Name: "data-db-0", Namespace: "db"},
				FsStats: statsv1alpha1.FsStats{CapacityBytes: &capacity, AvailableBytes: &avail, UsedBytes: &used,
					Inodes: &inodes, InodesFree: &free, InodesUsed: &inodesUsed}}},
		}}}, nil
	})
	if err := m.RegisterVolumeStats(stats); err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "kubelet_volume_stats_") {
			fmt.Print(line)
		}
	}
	// Output:
	// kubelet_volume_stats_available_bytes{namespace="db",persistentvolumeclaim="data-db-0"} 7.516192768e+09
	// kubelet_volume_stats_capacity_bytes{namespace="db",persistentvolumeclaim="data-db-0"} 1.073741824e+10
	// kubelet_volume_stats_inodes{namespace="db",persistentvolumeclaim="data-db-0"} 1000
	// kubelet_volume_stats_inodes_free{namespace="db",persistentvolumeclaim="data-db-0"} 900
	// kubelet_volume_stats_inodes_used{namespace="db",persistentvolumeclaim="data-db-0"} 100
	// kubelet_volume_stats_used_bytes{namespace="db",persistentvolumeclaim="data-db-0"} 3.221225472e+09
}
