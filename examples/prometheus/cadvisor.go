package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// UsageProvider gives the pods' and their containers' usage as the runtime
// measured it: *stats.Provider and *agent.Agent implement it.
type UsageProvider interface {
	Usage(ctx context.Context) (*stats.Usage, error)
}

// UsageFunc adapts a function to UsageProvider.
type UsageFunc func(ctx context.Context) (*stats.Usage, error)

// Usage calls f.
func (f UsageFunc) Usage(ctx context.Context) (*stats.Usage, error) { return f(ctx) }

var _ UsageProvider = UsageFunc(nil)

// CgroupStatsProvider reads what the pods' cgroups and network namespaces
// tell beyond the runtime's CRI stats: *stats.CgroupReader and
// *agent.Agent implement it. It never fails: a pod, cgroup or figure it
// could not read is left out.
type CgroupStatsProvider interface {
	CgroupStats(ctx context.Context, pods []stats.PodUsage) map[types.UID]*stats.PodCgroupStats
}

// CgroupStatsFunc adapts a function to CgroupStatsProvider.
type CgroupStatsFunc func(ctx context.Context, pods []stats.PodUsage) map[types.UID]*stats.PodCgroupStats

// CgroupStats calls f.
func (f CgroupStatsFunc) CgroupStats(ctx context.Context, pods []stats.PodUsage) map[types.UID]*stats.PodCgroupStats {
	return f(ctx, pods)
}

var _ CgroupStatsProvider = CgroupStatsFunc(nil)

// CadvisorOptions configure the /metrics/cadvisor collectors. The zero
// value bounds a scrape's calls to 5s, reads no cgroup and logs nothing.
type CadvisorOptions struct {
	// Timeout bounds the usage and the machine's figures in one scrape;
	// 0 means 5s.
	Timeout time.Duration
	// Logger receives what could not be measured; nil discards it.
	Logger *slog.Logger
	// Cgroups, when set, adds the series cAdvisor reads from the pods'
	// and containers' cgroups and the pods' network namespaces, which
	// the CRI stats do not give: CFS throttling, page cache, block I/O,
	// packets and drops. Nil serves none of them.
	Cgroups CgroupStatsProvider
}

func (o CadvisorOptions) defaults() CadvisorOptions {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// The label names of cAdvisor's series as upstream kubelet labels them
// (its containerPrometheusLabelsFunc), and of its machine series.
var (
	cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}
	machineLabels  = []string{"boot_id", "machine_id", "system_uuid"}
)

func cadvisorDesc(name, help string, extra ...string) *prom.Desc {
	return prom.NewDesc(name, help, append(append([]string(nil), cadvisorLabels...), extra...), nil)
}

// The series /metrics/cadvisor has from the CRI: cAdvisor's names, help
// texts and types.
var (
	cadvisorCPUDesc      = cadvisorDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "cpu")
	cadvisorMemUsageDesc = cadvisorDesc("container_memory_usage_bytes",
		"Current memory usage in bytes, including all memory regardless of when it was accessed")
	cadvisorWorkingSetDesc = cadvisorDesc("container_memory_working_set_bytes", "Current working set in bytes.")
	cadvisorRSSDesc        = cadvisorDesc("container_memory_rss", "Size of RSS in bytes.")
	cadvisorFailuresDesc   = cadvisorDesc("container_memory_failures_total", "Cumulative count of memory allocation failures.",
		"failure_type", "scope")
	cadvisorSwapDesc    = cadvisorDesc("container_memory_swap", "Container swap usage in bytes.")
	cadvisorFsUsageDesc = cadvisorDesc("container_fs_usage_bytes",
		"Number of bytes that are consumed by the container on this filesystem.", "device")
	cadvisorRxBytesDesc  = cadvisorDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", "interface")
	cadvisorRxErrorsDesc = cadvisorDesc("container_network_receive_errors_total",
		"Cumulative count of errors encountered while receiving", "interface")
	cadvisorTxBytesDesc  = cadvisorDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", "interface")
	cadvisorTxErrorsDesc = cadvisorDesc("container_network_transmit_errors_total",
		"Cumulative count of errors encountered while transmitting", "interface")
	cadvisorProcessesDesc = cadvisorDesc("container_processes", "Number of processes running inside the container.")
	cadvisorStartDesc     = cadvisorDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.")
	cadvisorCPUStalled    = cadvisorDesc("container_pressure_cpu_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to CPU congestion.")
	cadvisorCPUWaiting = cadvisorDesc("container_pressure_cpu_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to CPU congestion.")
	cadvisorMemStalled = cadvisorDesc("container_pressure_memory_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to memory congestion.")
	cadvisorMemWaiting = cadvisorDesc("container_pressure_memory_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to memory congestion.")
	cadvisorIOStalled = cadvisorDesc("container_pressure_io_stalled_seconds_total",
		"Total time duration no tasks in the container could make progress due to IO congestion.")
	cadvisorIOWaiting = cadvisorDesc("container_pressure_io_waiting_seconds_total",
		"Total time duration tasks in the container have waited due to IO congestion.")
	cadvisorCFSPeriodsDesc   = cadvisorDesc("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.")
	cadvisorCFSThrottledDesc = cadvisorDesc("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.")
	cadvisorCFSSecondsDesc   = cadvisorDesc("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.")
	cadvisorMemCacheDesc     = cadvisorDesc("container_memory_cache", "Number of bytes of page cache memory.")
	cadvisorReadBytesDesc    = cadvisorDesc("container_fs_reads_bytes_total", "Cumulative count of bytes read", "device")
	cadvisorReadsDesc        = cadvisorDesc("container_fs_reads_total", "Cumulative count of reads completed", "device")
	cadvisorWriteBytesDesc   = cadvisorDesc("container_fs_writes_bytes_total", "Cumulative count of bytes written", "device")
	cadvisorWritesDesc       = cadvisorDesc("container_fs_writes_total", "Cumulative count of writes completed", "device")
	cadvisorBlkioDesc        = cadvisorDesc("container_blkio_device_usage_total", "Blkio Device bytes usage", "device", "major", "minor", "operation")
	cadvisorRxPacketsDesc    = cadvisorDesc("container_network_receive_packets_total", "Cumulative count of packets received", "interface")
	cadvisorRxDroppedDesc    = cadvisorDesc("container_network_receive_packets_dropped_total",
		"Cumulative count of packets dropped while receiving", "interface")
	cadvisorTxPacketsDesc = cadvisorDesc("container_network_transmit_packets_total", "Cumulative count of packets transmitted", "interface")
	cadvisorTxDroppedDesc = cadvisorDesc("container_network_transmit_packets_dropped_total",
		"Cumulative count of packets dropped while transmitting", "interface")
	cadvisorScrapeErrorDesc = prom.NewDesc("container_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)

	machineCoresDesc  = prom.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", machineLabels, nil)
	machineMemoryDesc = prom.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", machineLabels, nil)
	machineSwapDesc   = prom.NewDesc("machine_swap_bytes", "Amount of swap memory available on the machine.", machineLabels, nil)
	machineErrorDesc  = prom.NewDesc("machine_scrape_error",
		"1 if there was an error while getting machine metrics, 0 otherwise.", nil, nil)
)

// CadvisorCollector is the workload half of upstream kubelet's
// /metrics/cadvisor, built from the runtime's CRI stats (stats.Usage)
// instead of cAdvisor's cgroup walk: for each running container, its CPU
// time, memory usage, working set, RSS, page faults, swap, writable layer
// and pressure stall times, and its start time; for each pod (container
// label empty), the sandbox's own CPU time, memory, page faults, process
// count, pressure stall times and network counters by interface; plus
// container_scrape_error. With CadvisorOptions.Cgroups, also what cAdvisor
// reads of the cgroups and network namespaces: for each container and
// pod, its CFS throttling (with a CPU quota), page cache and block I/O by
// device; for each pod, its packets and drops by interface. A figure the
// runtime (or the cgroup) did not give is left out, and every sample is
// stamped with the time its figure was taken. See docs/metrics.md for what
// cAdvisor serves that this does not.
type CadvisorCollector struct {
	usage UsageProvider
	o     CadvisorOptions
}

var _ prom.Collector = (*CadvisorCollector)(nil)

// NewCadvisorCollector returns the collector of the workload series over
// usage.
func NewCadvisorCollector(usage UsageProvider, opts CadvisorOptions) (*CadvisorCollector, error) {
	if usage == nil {
		return nil, fmt.Errorf("new cadvisor collector: usage provider is nil: %w", ErrInvalidArgument)
	}
	return &CadvisorCollector{usage: usage, o: opts.defaults()}, nil
}

// Describe implements prom.Collector.
func (c *CadvisorCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{cadvisorCPUDesc, cadvisorMemUsageDesc, cadvisorWorkingSetDesc, cadvisorRSSDesc, cadvisorFailuresDesc,
		cadvisorSwapDesc, cadvisorFsUsageDesc, cadvisorRxBytesDesc, cadvisorRxErrorsDesc, cadvisorTxBytesDesc, cadvisorTxErrorsDesc,
		cadvisorProcessesDesc, cadvisorStartDesc, cadvisorCPUStalled, cadvisorCPUWaiting, cadvisorMemStalled, cadvisorMemWaiting,
		cadvisorIOStalled, cadvisorIOWaiting, cadvisorScrapeErrorDesc, cadvisorCFSPeriodsDesc, cadvisorCFSThrottledDesc, cadvisorCFSSecondsDesc,
		cadvisorMemCacheDesc, cadvisorReadBytesDesc, cadvisorReadsDesc, cadvisorWriteBytesDesc, cadvisorWritesDesc, cadvisorBlkioDesc,
		cadvisorRxPacketsDesc, cadvisorRxDroppedDesc, cadvisorTxPacketsDesc, cadvisorTxDroppedDesc} {
		ch <- d
	}
}

// Collect implements prom.Collector.
func (c *CadvisorCollector) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	u, err := c.usage.Usage(ctx)
	if err == nil && u == nil {
		err = errors.New("no usage")
	}
	if err != nil {
		c.o.Logger.Warn("Couldn't get containers", "err", err)
		ch <- prom.MustNewConstMetric(cadvisorScrapeErrorDesc, prom.GaugeValue, 1)
		return
	}
	var cgroups map[types.UID]*stats.PodCgroupStats
	if c.o.Cgroups != nil {
		cgroups = c.o.Cgroups.CgroupStats(ctx, u.Pods)
	}
	for _, p := range u.Pods {
		cg := cgroups[types.UID(p.Ref.UID)]
		// The pod's own series: cAdvisor's of the pod cgroup, and of the
		// sandbox for the network, with no container, name or image.
		pod := []string{"", p.SandboxID, "", "", p.Ref.Namespace, p.Ref.Name}
		cpuSeries(ch, p.CPU, pod)
		memorySeries(ch, p.Memory, pod)
		if p.Process != nil {
			sample(ch, cadvisorProcessesDesc, prom.GaugeValue, metav1.Time{}, p.Process.ProcessCount, pod...)
		}
		if p.IO != nil {
			psiSeries(ch, cadvisorIOStalled, cadvisorIOWaiting, p.IO.Time, p.IO.PSI, pod)
		}
		if n := p.Network; n != nil {
			for _, i := range n.Interfaces {
				labels := append(append([]string(nil), pod...), i.Name)
				sample(ch, cadvisorRxBytesDesc, prom.CounterValue, n.Time, i.RxBytes, labels...)
				sample(ch, cadvisorRxErrorsDesc, prom.CounterValue, n.Time, i.RxErrors, labels...)
				sample(ch, cadvisorTxBytesDesc, prom.CounterValue, n.Time, i.TxBytes, labels...)
				sample(ch, cadvisorTxErrorsDesc, prom.CounterValue, n.Time, i.TxErrors, labels...)
			}
		}
		if cg != nil {
			cgroupSeries(ch, cg.Pod, pod)
			networkPacketSeries(ch, cg.Network, pod)
		}
		for _, ctr := range p.Containers {
			labels := []string{ctr.Name, ctr.ID, ctr.Image, ctr.ID, p.Ref.Namespace, p.Ref.Name}
			// Whole seconds, as cAdvisor's.
			ch <- prom.MustNewConstMetric(cadvisorStartDesc, prom.GaugeValue, float64(ctr.CreatedAt.Unix()), labels...)
			cpuSeries(ch, ctr.CPU, labels)
			memorySeries(ch, ctr.Memory, labels)
			if sw := ctr.Swap; sw != nil {
				sample(ch, cadvisorSwapDesc, prom.GaugeValue, sw.Time, sw.SwapUsageBytes, labels...)
			}
			if w := ctr.WritableLayer; w != nil {
				sample(ch, cadvisorFsUsageDesc, prom.GaugeValue, metav1.NewTime(w.Time), w.UsedBytes, append(labels, w.Mountpoint)...)
			}
			if ctr.IO != nil {
				psiSeries(ch, cadvisorIOStalled, cadvisorIOWaiting, ctr.IO.Time, ctr.IO.PSI, labels)
			}
			if cs, ok := containerCgroup(cg, ctr.ID); ok {
				cgroupSeries(ch, cs, labels)
			}
		}
	}
	ch <- prom.MustNewConstMetric(cadvisorScrapeErrorDesc, prom.GaugeValue, 0)
}

// containerCgroup is the cgroup figures of container id in a pod's, if
// they were read.
func containerCgroup(pod *stats.PodCgroupStats, id string) (stats.CgroupStats, bool) {
	if pod == nil {
		return stats.CgroupStats{}, false
	}
	cs, ok := pod.Containers[id]
	return cs, ok
}

// cgroupSeries sends what a cgroup tells beyond the CRI stats, as cAdvisor
// serves it: the CFS counters (only with a CPU quota), the page cache, and
// the block I/O by device. A device sysfs did not name is left out of the
// series labelled by device alone, where two such would collide.
func cgroupSeries(ch chan<- prom.Metric, s stats.CgroupStats, labels []string) {
	at := metav1.NewTime(s.Time)
	if c := s.CFS; c != nil {
		throttled := c.ThrottledTime.Seconds()
		sample(ch, cadvisorCFSPeriodsDesc, prom.CounterValue, at, &c.Periods, labels...)
		sample(ch, cadvisorCFSThrottledDesc, prom.CounterValue, at, &c.ThrottledPeriods, labels...)
		sample(ch, cadvisorCFSSecondsDesc, prom.CounterValue, at, &throttled, labels...)
	}
	sample(ch, cadvisorMemCacheDesc, prom.GaugeValue, at, s.MemoryCacheBytes, labels...)
	for _, d := range s.IO {
		if d.Device != "" {
			dev := append(slices.Clone(labels), d.Device)
			ioSample(ch, cadvisorReadBytesDesc, at, d.Bytes, "Read", dev)
			ioSample(ch, cadvisorWriteBytesDesc, at, d.Bytes, "Write", dev)
			ioSample(ch, cadvisorReadsDesc, at, d.Ops, "Read", dev)
			ioSample(ch, cadvisorWritesDesc, at, d.Ops, "Write", dev)
		}
		major, minor := strconv.FormatUint(d.Major, 10), strconv.FormatUint(d.Minor, 10)
		for _, op := range slices.Sorted(maps.Keys(d.Bytes)) {
			v := d.Bytes[op]
			sample(ch, cadvisorBlkioDesc, prom.CounterValue, at, &v, append(slices.Clone(labels), d.Device, major, minor, op)...)
		}
	}
}

// ioSample sends a device's figure of operation op, 0 when the table has
// none for it, as cAdvisor's; nothing when the cgroup's files said nothing
// of the device in that table.
func ioSample(ch chan<- prom.Metric, d *prom.Desc, at metav1.Time, table map[string]uint64, op string, labels []string) {
	if table == nil {
		return
	}
	v := table[op]
	sample(ch, d, prom.CounterValue, at, &v, labels...)
}

// networkPacketSeries sends the packets and drops of the pod's network
// namespace by interface.
func networkPacketSeries(ch chan<- prom.Metric, n *stats.PodNetworkStats, pod []string) {
	if n == nil {
		return
	}
	at := metav1.NewTime(n.Time)
	for _, i := range n.Interfaces {
		labels := append(slices.Clone(pod), i.Name)
		sample(ch, cadvisorRxPacketsDesc, prom.CounterValue, at, &i.RxPackets, labels...)
		sample(ch, cadvisorRxDroppedDesc, prom.CounterValue, at, &i.RxDropped, labels...)
		sample(ch, cadvisorTxPacketsDesc, prom.CounterValue, at, &i.TxPackets, labels...)
		sample(ch, cadvisorTxDroppedDesc, prom.CounterValue, at, &i.TxDropped, labels...)
	}
}

// cpuSeries sends the CPU time, with cpu="total" as cAdvisor's when it has
// no per-CPU figures, and left out while zero as cAdvisor's; and the CPU
// pressure.
func cpuSeries(ch chan<- prom.Metric, c *statsv1alpha1.CPUStats, labels []string) {
	if c == nil {
		return
	}
	if ns := c.UsageCoreNanoSeconds; ns != nil && *ns > 0 {
		sample(ch, cadvisorCPUDesc, prom.CounterValue, c.Time, nanosToSeconds(ns), append(labels, "total")...)
	}
	psiSeries(ch, cadvisorCPUStalled, cadvisorCPUWaiting, c.Time, c.PSI, labels)
}

// memorySeries sends usage, working set, RSS, page faults and the memory
// pressure. The runtime's page faults are the cgroup's own; a container's
// or pod's cgroup counts its descendants' as well (cgroup v2's memory.stat
// is hierarchical, and a container has no child cgroup), so they are both
// cAdvisor's "container" and its "hierarchy" scope.
func memorySeries(ch chan<- prom.Metric, m *statsv1alpha1.MemoryStats, labels []string) {
	if m == nil {
		return
	}
	sample(ch, cadvisorMemUsageDesc, prom.GaugeValue, m.Time, m.UsageBytes, labels...)
	sample(ch, cadvisorWorkingSetDesc, prom.GaugeValue, m.Time, m.WorkingSetBytes, labels...)
	sample(ch, cadvisorRSSDesc, prom.GaugeValue, m.Time, m.RSSBytes, labels...)
	for _, scope := range []string{"container", "hierarchy"} {
		sample(ch, cadvisorFailuresDesc, prom.CounterValue, m.Time, m.PageFaults, append(labels, "pgfault", scope)...)
		sample(ch, cadvisorFailuresDesc, prom.CounterValue, m.Time, m.MajorPageFaults, append(labels, "pgmajfault", scope)...)
	}
	psiSeries(ch, cadvisorMemStalled, cadvisorMemWaiting, m.Time, m.PSI, labels)
}

// psiSeries sends a resource's stalled ("full") and waiting ("some")
// totals, which the kernel and the CRI count in microseconds, in seconds.
func psiSeries(ch chan<- prom.Metric, stalled, waiting *prom.Desc, at metav1.Time, psi *statsv1alpha1.PSIStats, labels []string) {
	if psi == nil {
		return
	}
	full, some := float64(psi.Full.Total)/1e6, float64(psi.Some.Total)/1e6
	sample(ch, stalled, prom.CounterValue, at, &full, labels...)
	sample(ch, waiting, prom.CounterValue, at, &some, labels...)
}

// MachineCollector is the machine half of upstream kubelet's
// /metrics/cadvisor, cAdvisor's machine series from a node.Machine:
// machine_cpu_cores (the cpu capacity), machine_memory_bytes (the memory
// capacity, MemTotal) and machine_swap_bytes (the swap capacity, 0 without
// swap), labelled with the machine's boot_id, machine_id and system_uuid;
// plus machine_scrape_error.
type MachineCollector struct {
	machine node.Machine
	o       CadvisorOptions
}

var _ prom.Collector = (*MachineCollector)(nil)

// NewMachineCollector returns the collector of the machine series over
// machine.
func NewMachineCollector(machine node.Machine, opts CadvisorOptions) (*MachineCollector, error) {
	if machine == nil {
		return nil, fmt.Errorf("new machine collector: machine is nil: %w", ErrInvalidArgument)
	}
	return &MachineCollector{machine: machine, o: opts.defaults()}, nil
}

// Describe implements prom.Collector.
func (c *MachineCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{machineCoresDesc, machineMemoryDesc, machineSwapDesc, machineErrorDesc} {
		ch <- d
	}
}

// Collect implements prom.Collector.
func (c *MachineCollector) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	capacity, err := c.machine.Capacity(ctx)
	var info v1.NodeSystemInfo
	if err == nil {
		info, err = c.machine.SystemInfo(ctx)
	}
	if err != nil {
		c.o.Logger.Warn("Couldn't get machine info", "err", err)
		ch <- prom.MustNewConstMetric(machineErrorDesc, prom.GaugeValue, 1)
		return
	}
	labels := []string{info.BootID, info.MachineID, info.SystemUUID}
	if q, ok := capacity[v1.ResourceCPU]; ok {
		ch <- prom.MustNewConstMetric(machineCoresDesc, prom.GaugeValue, float64(q.Value()), labels...)
	}
	if q, ok := capacity[v1.ResourceMemory]; ok {
		ch <- prom.MustNewConstMetric(machineMemoryDesc, prom.GaugeValue, float64(q.Value()), labels...)
	}
	var swap int64
	if info.Swap != nil && info.Swap.Capacity != nil {
		swap = *info.Swap.Capacity
	}
	ch <- prom.MustNewConstMetric(machineSwapDesc, prom.GaugeValue, float64(swap), labels...)
	ch <- prom.MustNewConstMetric(machineErrorDesc, prom.GaugeValue, 0)
}

// NewCadvisorHandler serves upstream kubelet's /metrics/cadvisor on a
// registry of its own: the machine series over machine and the workload
// series over usage, in the Prometheus exposition formats.
func NewCadvisorHandler(usage UsageProvider, machine node.Machine, opts CadvisorOptions) (http.Handler, error) {
	cc, err := NewCadvisorCollector(usage, opts)
	if err != nil {
		return nil, err
	}
	mc, err := NewMachineCollector(machine, opts)
	if err != nil {
		return nil, err
	}
	reg := prom.NewRegistry()
	for _, c := range []prom.Collector{mc, cc} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("new cadvisor handler: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: errorLog{cc.o.Logger}, ErrorHandling: promhttp.ContinueOnError}), nil
}
