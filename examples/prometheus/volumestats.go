package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/server"
)

// RegisterVolumeStats adds upstream kubelet's volume stats collector
// (pkg/kubelet/metrics/collectors' volumeStatsCollector) over stats, the
// node's summary provider (the agent's API().Summary): at every scrape it
// takes the full summary and, for each pod volume that carries a pvcRef
// (a persistentVolumeClaim or generic ephemeral volume, as package stats
// reports them from the volume manager), gauges by namespace and
// persistentvolumeclaim:
//
//	kubelet_volume_stats_capacity_bytes, kubelet_volume_stats_available_bytes,
//	kubelet_volume_stats_used_bytes, kubelet_volume_stats_inodes,
//	kubelet_volume_stats_inodes_free, kubelet_volume_stats_inodes_used
//
// A claim that several pods use is reported once, from the first pod of
// the summary. kubelet_volume_stats_health_status_abnormal, which
// upstream serves only for volumes whose stats carry a health (its alpha
// CSIVolumeHealth gate, off in 1.36), is never served: the summary's
// types have no volume health. A summary that fails, or takes longer than
// Options.ScrapeTimeout, gives no series in that scrape, as upstream's. Call
// it once: it fails when the registry already holds the collector.
func (m *Metrics) RegisterVolumeStats(stats server.StatsProvider) error {
	if stats == nil {
		return fmt.Errorf("register volume stats: stats provider is nil: %w", ErrInvalidArgument)
	}
	if err := m.reg.Register(newVolumeStatsCollector(stats, m.timeout, m.log)); err != nil {
		return fmt.Errorf("register volume stats: %w", err)
	}
	return nil
}

// volumeStatsCollector computes the volume stats gauges at scrape time.
type volumeStatsCollector struct {
	stats   server.StatsProvider
	timeout time.Duration
	log     *slog.Logger

	capacity, available, used, inodes, inodesFree, inodesUsed *prom.Desc
}

var _ prom.Collector = (*volumeStatsCollector)(nil)

func newVolumeStatsCollector(stats server.StatsProvider, timeout time.Duration, log *slog.Logger) *volumeStatsCollector {
	labels := []string{"namespace", "persistentvolumeclaim"}
	desc := func(name, help string) *prom.Desc { return prom.NewDesc(name, alpha(help), labels, nil) }
	return &volumeStatsCollector{
		stats: stats, timeout: timeout, log: log,
		capacity:   desc("kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume"),
		available:  desc("kubelet_volume_stats_available_bytes", "Number of available bytes in the volume"),
		used:       desc("kubelet_volume_stats_used_bytes", "Number of used bytes in the volume"),
		inodes:     desc("kubelet_volume_stats_inodes", "Maximum number of inodes in the volume"),
		inodesFree: desc("kubelet_volume_stats_inodes_free", "Number of free inodes in the volume"),
		inodesUsed: desc("kubelet_volume_stats_inodes_used", "Number of used inodes in the volume"),
	}
}

// Describe implements prom.Collector.
func (c *volumeStatsCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{c.capacity, c.available, c.used, c.inodes, c.inodesFree, c.inodesUsed} {
		ch <- d
	}
}

// Collect implements prom.Collector.
func (c *volumeStatsCollector) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.stats.Summary(ctx, false)
	if err == nil && s == nil {
		err = errors.New("no summary")
	}
	if err != nil {
		c.log.Warn("Volume stats not collected: the summary failed", "err", err)
		return
	}
	seen := map[statsv1alpha1.PVCReference]bool{}
	for _, p := range s.Pods {
		for _, v := range p.VolumeStats {
			if v.PVCRef == nil || seen[*v.PVCRef] {
				continue
			}
			seen[*v.PVCRef] = true
			for _, g := range []struct {
				desc *prom.Desc
				v    *uint64
			}{
				{c.capacity, v.CapacityBytes}, {c.available, v.AvailableBytes}, {c.used, v.UsedBytes},
				{c.inodes, v.Inodes}, {c.inodesFree, v.InodesFree}, {c.inodesUsed, v.InodesUsed},
			} {
				if g.v != nil {
					ch <- prom.MustNewConstMetric(g.desc, prom.GaugeValue, float64(*g.v), v.PVCRef.Namespace, v.PVCRef.Name)
				}
			}
		}
	}
}
