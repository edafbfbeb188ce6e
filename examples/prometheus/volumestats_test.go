package prometheus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/examples/prometheus"
)

// volumeStatsSeries are upstream's volume stats gauges
// (pkg/kubelet/metrics/collectors/volume_stats.go).
var volumeStatsSeries = map[string]upstream{
	"kubelet_volume_stats_capacity_bytes":  {typ: dto.MetricType_GAUGE, help: "[ALPHA] Capacity in bytes of the volume"},
	"kubelet_volume_stats_available_bytes": {typ: dto.MetricType_GAUGE, help: "[ALPHA] Number of available bytes in the volume"},
	"kubelet_volume_stats_used_bytes":      {typ: dto.MetricType_GAUGE, help: "[ALPHA] Number of used bytes in the volume"},
	"kubelet_volume_stats_inodes":          {typ: dto.MetricType_GAUGE, help: "[ALPHA] Maximum number of inodes in the volume"},
	"kubelet_volume_stats_inodes_free":     {typ: dto.MetricType_GAUGE, help: "[ALPHA] Number of free inodes in the volume"},
	"kubelet_volume_stats_inodes_used":     {typ: dto.MetricType_GAUGE, help: "[ALPHA] Number of used inodes in the volume"},
}

// volumeStat is a volume's stats with every figure, scaled by n.
func volumeStat(name string, ref *statsv1alpha1.PVCReference, n uint64) statsv1alpha1.VolumeStats {
	return statsv1alpha1.VolumeStats{Name: name, PVCRef: ref, FsStats: statsv1alpha1.FsStats{Time: statsAt,
		CapacityBytes: u64(10 * n), AvailableBytes: u64(7 * n), UsedBytes: u64(3 * n), Inodes: u64(100 * n), InodesFree: u64(90 * n), InodesUsed: u64(10 * n)}}
}

// The volume stats gauges are upstream's: computed at scrape time from
// the full summary, one set per claim (a claim two pods use is reported
// once, from the first pod), none for a volume without a pvcRef, and no
// health gauge (the summary has no volume health).
func TestVolumeStatsMetrics(t *testing.T) {
	data := &statsv1alpha1.PVCReference{Name: "data", Namespace: "db"}
	logs := &statsv1alpha1.PVCReference{Name: "logs", Namespace: "web"}
	summary := &statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{
		{PodRef: statsv1alpha1.PodReference{Name: "db-0", Namespace: "db"}, VolumeStats: []statsv1alpha1.VolumeStats{
			volumeStat("scratch", nil, 5), volumeStat("pgdata", data, 1000)}},
		{PodRef: statsv1alpha1.PodReference{Name: "backup", Namespace: "db"}, VolumeStats: []statsv1alpha1.VolumeStats{
			volumeStat("source", data, 2000)}},
		{PodRef: statsv1alpha1.PodReference{Name: "web", Namespace: "web"}, VolumeStats: []statsv1alpha1.VolumeStats{
			volumeStat("logs", logs, 1)}},
	}}
	var asked []bool
	m := newMetrics(t)
	require.NoError(t, m.RegisterVolumeStats(summaryFunc(func(_ context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
		asked = append(asked, onlyCPUAndMemory)
		return summary, nil
	})))

	all := expose(t, m.Handler())
	for name, want := range volumeStatsSeries {
		want.labels = []string{"namespace", "persistentvolumeclaim"}
		checkSeries(t, name, all[name], want)
	}
	assert.NotContains(t, all, "kubelet_volume_stats_health_status_abnormal")
	assert.Equal(t, []bool{false}, asked, "one full summary per scrape")

	names := make([]string, 0, len(volumeStatsSeries))
	for name := range volumeStatsSeries {
		names = append(names, name)
	}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP kubelet_volume_stats_available_bytes [ALPHA] Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
kubelet_volume_stats_available_bytes{namespace="db",persistentvolumeclaim="data"} 7000
kubelet_volume_stats_available_bytes{namespace="web",persistentvolumeclaim="logs"} 7
# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="db",persistentvolumeclaim="data"} 10000
kubelet_volume_stats_capacity_bytes{namespace="web",persistentvolumeclaim="logs"} 10
# HELP kubelet_volume_stats_inodes [ALPHA] Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="db",persistentvolumeclaim="data"} 100000
kubelet_volume_stats_inodes{namespace="web",persistentvolumeclaim="logs"} 100
# HELP kubelet_volume_stats_inodes_free [ALPHA] Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="db",persistentvolumeclaim="data"} 90000
kubelet_volume_stats_inodes_free{namespace="web",persistentvolumeclaim="logs"} 90
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="db",persistentvolumeclaim="data"} 10000
kubelet_volume_stats_inodes_used{namespace="web",persistentvolumeclaim="logs"} 10
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="db",persistentvolumeclaim="data"} 3000
kubelet_volume_stats_used_bytes{namespace="web",persistentvolumeclaim="logs"} 3
`), names...))
}

// A summary that fails (or is missing) gives no volume series; the rest
// of /metrics is served.
func TestVolumeStatsMetricsWithoutSummary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		summary *statsv1alpha1.Summary
		err     error
	}{
		{name: "error", err: errors.New("runtime down")},
		{name: "no summary"},
		{name: "no claims", summary: &statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{{
			VolumeStats: []statsv1alpha1.VolumeStats{volumeStat("scratch", nil, 1)}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics(t)
			require.NoError(t, m.RegisterVolumeStats(summaryFunc(func(context.Context, bool) (*statsv1alpha1.Summary, error) {
				return tc.summary, tc.err
			})))
			m.Event("Normal", "Started")
			all := expose(t, m.Handler())
			for name := range volumeStatsSeries {
				assert.NotContains(t, all, name)
			}
			assert.Contains(t, all, "kubeletkit_events_total")
		})
	}
}

func TestRegisterVolumeStatsErrors(t *testing.T) {
	m := newMetrics(t)
	require.ErrorIs(t, m.RegisterVolumeStats(nil), prometheus.ErrInvalidArgument)
	s := summaryFunc(func(context.Context, bool) (*statsv1alpha1.Summary, error) { return &statsv1alpha1.Summary{}, nil })
	require.NoError(t, m.RegisterVolumeStats(s))
	var already prom.AlreadyRegisteredError
	require.ErrorAs(t, m.RegisterVolumeStats(s), &already, "twice on the same registry")
}
