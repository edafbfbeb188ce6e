package prometheus

import (
	"sync/atomic"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/volume"
)

var _ agent.VolumeMetrics = (*Metrics)(nil)

// storageOperationBuckets are upstream's buckets of
// storage_operation_duration_seconds: 100ms to 10 minutes.
var storageOperationBuckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}

// Upstream's status label values of storage_operation_duration_seconds.
const (
	statusSuccess     = "success"
	statusFailUnknown = "fail-unknown"
)

// volumeMetrics are the volume manager's series.
type volumeMetrics struct {
	operations *prom.HistogramVec // by volume_plugin, operation_name, status, migrated
	totals     *volumeCollector
}

func newVolumeMetrics() volumeMetrics {
	return volumeMetrics{
		operations: prom.NewHistogramVec(prom.HistogramOpts{Name: "storage_operation_duration_seconds",
			Help: alpha("Storage operation duration"), Buckets: storageOperationBuckets},
			[]string{"volume_plugin", "operation_name", "status", "migrated"}),
		totals: &volumeCollector{desc: prom.NewDesc("volume_manager_total_volumes",
			alpha("Number of volumes in Volume Manager"), []string{"plugin_name", "state"}, nil)},
	}
}

// ObserveVolumeOperation implements agent.VolumeMetrics:
// storage_operation_duration_seconds by volume_plugin, operation_name,
// status ("success", or upstream's "fail-unknown" for any error) and
// migrated (always "false": no in-tree volume is migrated to CSI here).
func (m *Metrics) ObserveVolumeOperation(op, plugin string, d time.Duration, err error) {
	status := statusSuccess
	if err != nil {
		status = statusFailUnknown
	}
	m.volumes.operations.WithLabelValues(plugin, op, status, "false").Observe(d.Seconds())
}

// CountVolumes implements agent.VolumeMetrics: volume_manager_total_volumes
// is count's result at every scrape (none before it is given). A later
// call replaces an earlier one: one agent per Metrics.
func (m *Metrics) CountVolumes(count func() []volume.VolumeCount) {
	m.volumes.totals.count.Store(&count)
}

// volumeCollector is volume_manager_total_volumes, read at scrape time.
type volumeCollector struct {
	desc  *prom.Desc
	count atomic.Pointer[func() []volume.VolumeCount]
}

var _ prom.Collector = (*volumeCollector)(nil)

// Describe implements prom.Collector.
func (c *volumeCollector) Describe(ch chan<- *prom.Desc) { ch <- c.desc }

// Collect implements prom.Collector: per plugin, a series for each state
// that holds any of its volumes, as upstream's (a plugin with no volume
// set up has no actual_state_of_world series).
func (c *volumeCollector) Collect(ch chan<- prom.Metric) {
	count := c.count.Load()
	if count == nil {
		return
	}
	for _, vc := range (*count)() {
		for _, s := range []struct {
			state string
			n     int
		}{{"desired_state_of_world", vc.Desired}, {"actual_state_of_world", vc.Actual}} {
			if s.n > 0 {
				ch <- prom.MustNewConstMetric(c.desc, prom.GaugeValue, float64(s.n), vc.Plugin, s.state)
			}
		}
	}
}
