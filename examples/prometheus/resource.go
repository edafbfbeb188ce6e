package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/server"
)

// ResourceOptions configure the /metrics/resource collector. The zero value
// bounds a scrape's summary to 5s and logs nothing.
type ResourceOptions struct {
	// Timeout bounds the StatsProvider's Summary in one scrape; 0 means 5s.
	Timeout time.Duration
	// Logger receives the summaries that failed; nil discards them.
	Logger *slog.Logger
}

// The resource metrics, as upstream kubelet serves them on
// /metrics/resource.
var (
	nodeCPUDesc = prom.NewDesc("node_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the node in core-seconds"), nil, nil)
	nodeMemoryDesc = prom.NewDesc("node_memory_working_set_bytes",
		stable("Current working set of the node in bytes"), nil, nil)
	nodeSwapDesc = prom.NewDesc("node_swap_usage_bytes",
		alpha("Current swap usage of the node in bytes. Reported only on non-windows systems"), nil, nil)
	containerStartDesc = prom.NewDesc("container_start_time_seconds",
		stable("Start time of the container since unix epoch in seconds"), containerLabels, nil)
	containerCPUDesc = prom.NewDesc("container_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the container in core-seconds"), containerLabels, nil)
	containerMemoryDesc = prom.NewDesc("container_memory_working_set_bytes",
		stable("Current working set of the container in bytes"), containerLabels, nil)
	containerSwapDesc = prom.NewDesc("container_swap_usage_bytes",
		alpha("Current amount of the container swap usage in bytes. Reported only on non-windows systems"), containerLabels, nil)
	containerSwapLimitDesc = prom.NewDesc("container_swap_limit_bytes",
		alpha("Current amount of the container swap limit in bytes. Reported only on non-windows systems"), containerLabels, nil)
	podCPUDesc = prom.NewDesc("pod_cpu_usage_seconds_total",
		stable("Cumulative cpu time consumed by the pod in core-seconds"), podLabels, nil)
	podMemoryDesc = prom.NewDesc("pod_memory_working_set_bytes",
		stable("Current working set of the pod in bytes"), podLabels, nil)
	podSwapDesc = prom.NewDesc("pod_swap_usage_bytes",
		alpha("Current amount of the pod swap usage in bytes. Reported only on non-windows systems"), podLabels, nil)
	scrapeErrorDesc = prom.NewDesc("resource_scrape_error",
		stable("1 if there was an error while getting container metrics, 0 otherwise"), nil, nil)

	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}
)

// ResourceCollector is the collector of upstream kubelet's
// /metrics/resource: at every scrape it asks a server.StatsProvider for the
// reduced summary (CPU and memory only) and reports the node's, each pod's
// and each container's CPU time, working set and swap, and each container's
// start time, every sample stamped with the time its statistic was taken
// (the start time excepted), plus resource_scrape_error: 1 when the
// summary failed (and nothing else is reported), else 0. A statistic the
// summary lacks is left out.
type ResourceCollector struct {
	stats   server.StatsProvider
	timeout time.Duration
	log     *slog.Logger
}

var _ prom.Collector = (*ResourceCollector)(nil)

// NewResourceCollector returns the /metrics/resource collector over stats.
func NewResourceCollector(stats server.StatsProvider, opts ResourceOptions) (*ResourceCollector, error) {
	if stats == nil {
		return nil, fmt.Errorf("new resource collector: stats provider is nil: %w", ErrInvalidArgument)
	}
	c := &ResourceCollector{stats: stats, timeout: opts.Timeout, log: opts.Logger}
	if c.timeout <= 0 {
		c.timeout = 5 * time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// NewResourceHandler serves the /metrics/resource collector over stats, on
// a registry of its own, in the Prometheus exposition formats.
func NewResourceHandler(stats server.StatsProvider, opts ResourceOptions) (http.Handler, error) {
	c, err := NewResourceCollector(stats, opts)
	if err != nil {
		return nil, err
	}
	reg := prom.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("new resource handler: %w", err)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: errorLog{c.log}, ErrorHandling: promhttp.ContinueOnError}), nil
}

// Describe implements prom.Collector.
func (c *ResourceCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{nodeCPUDesc, nodeMemoryDesc, nodeSwapDesc, containerStartDesc, containerCPUDesc,
		containerMemoryDesc, containerSwapDesc, containerSwapLimitDesc, podCPUDesc, podMemoryDesc, podSwapDesc, scrapeErrorDesc} {
		ch <- d
	}
}

// Collect implements prom.Collector.
func (c *ResourceCollector) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.stats.Summary(ctx, true)
	if err == nil && s == nil {
		err = errors.New("no summary")
	}
	if err != nil {
		c.log.Error("Error getting summary for resourceMetric prometheus endpoint", "err", err)
		ch <- prom.MustNewConstMetric(scrapeErrorDesc, prom.GaugeValue, 1)
		return
	}
	node := s.Node
	if node.CPU != nil {
		sample(ch, nodeCPUDesc, prom.CounterValue, node.CPU.Time, nanosToSeconds(node.CPU.UsageCoreNanoSeconds))
	}
	if node.Memory != nil {
		sample(ch, nodeMemoryDesc, prom.GaugeValue, node.Memory.Time, node.Memory.WorkingSetBytes)
	}
	if node.Swap != nil {
		sample(ch, nodeSwapDesc, prom.GaugeValue, node.Swap.Time, node.Swap.SwapUsageBytes)
	}
	for _, p := range s.Pods {
		pod := []string{p.PodRef.Name, p.PodRef.Namespace}
		for _, ctr := range p.Containers {
			labels := append([]string{ctr.Name}, pod...)
			if start := ctr.StartTime; start.Unix() > 0 {
				ch <- prom.MustNewConstMetric(containerStartDesc, prom.GaugeValue, float64(start.UnixNano())/float64(time.Second), labels...)
			}
			if ctr.CPU != nil {
				sample(ch, containerCPUDesc, prom.CounterValue, ctr.CPU.Time, nanosToSeconds(ctr.CPU.UsageCoreNanoSeconds), labels...)
			}
			if ctr.Memory != nil {
				sample(ch, containerMemoryDesc, prom.GaugeValue, ctr.Memory.Time, ctr.Memory.WorkingSetBytes, labels...)
			}
			if sw := ctr.Swap; sw != nil {
				sample(ch, containerSwapDesc, prom.GaugeValue, sw.Time, sw.SwapUsageBytes, labels...)
				// The limit is what is available plus what is used.
				if sw.SwapAvailableBytes != nil {
					limit := *sw.SwapAvailableBytes
					if sw.SwapUsageBytes != nil {
						limit += *sw.SwapUsageBytes
					}
					sample(ch, containerSwapLimitDesc, prom.GaugeValue, sw.Time, &limit, labels...)
				}
			}
		}
		if p.CPU != nil {
			sample(ch, podCPUDesc, prom.CounterValue, p.CPU.Time, nanosToSeconds(p.CPU.UsageCoreNanoSeconds), pod...)
		}
		if p.Memory != nil {
			sample(ch, podMemoryDesc, prom.GaugeValue, p.Memory.Time, p.Memory.WorkingSetBytes, pod...)
		}
		if p.Swap != nil {
			sample(ch, podSwapDesc, prom.GaugeValue, p.Swap.Time, p.Swap.SwapUsageBytes, pod...)
		}
	}
	ch <- prom.MustNewConstMetric(scrapeErrorDesc, prom.GaugeValue, 0)
}

// number is what the summary's statistics are counted in.
type number interface{ ~uint64 | ~float64 }

// sample sends one sample of d, stamped with when it was taken, unless the
// statistic is missing (nil). A statistic without a time is sent without a
// timestamp.
func sample[N number](ch chan<- prom.Metric, d *prom.Desc, typ prom.ValueType, at metav1.Time, v *N, labels ...string) {
	if v == nil {
		return
	}
	m := prom.MustNewConstMetric(d, typ, float64(*v), labels...)
	if !at.IsZero() {
		m = prom.NewMetricWithTimestamp(at.Time, m)
	}
	ch <- m
}

// nanosToSeconds turns the core-nanoseconds of a CPU statistic into
// core-seconds; nil stays nil.
func nanosToSeconds(ns *uint64) *float64 {
	if ns == nil {
		return nil
	}
	s := float64(*ns) / float64(time.Second)
	return &s
}
