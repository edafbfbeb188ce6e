package prometheus

import (
	"strconv"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kubeletkit/kubeletkit/agent"
)

var _ agent.ResourceMetrics = (*Metrics)(nil)

// topologyAdmissionBuckets are upstream's buckets of
// kubelet_topology_manager_admission_duration_ms: 0.05ms doubling 15
// times.
var topologyAdmissionBuckets = prom.ExponentialBuckets(.05, 2, 15)

// managerMetrics are the CPU and topology managers' series, registered
// always, as upstream's kubelet registers them whatever its policies.
type managerMetrics struct {
	pinning, pinningErrors     prom.Counter
	sharedPool, exclusive      prom.Gauge
	perNUMA                    *prom.GaugeVec   // by numa_node
	aligned, alignedFailures   *prom.CounterVec // by scope, boundary
	admissions, admissionError prom.Counter
	admissionDuration          prom.Histogram
	memPinning, memErrors      prom.Counter
}

func newManagerMetrics() managerMetrics {
	return managerMetrics{
		pinning: prom.NewCounter(prom.CounterOpts{Name: "kubelet_cpu_manager_pinning_requests_total",
			Help: alpha("The number of cpu core allocations which required pinning.")}),
		pinningErrors: prom.NewCounter(prom.CounterOpts{Name: "kubelet_cpu_manager_pinning_errors_total",
			Help: alpha("The number of cpu core allocations which required pinning failed.")}),
		sharedPool: prom.NewGauge(prom.GaugeOpts{Name: "kubelet_cpu_manager_shared_pool_size_millicores",
			Help: alpha("The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.")}),
		exclusive: prom.NewGauge(prom.GaugeOpts{Name: "kubelet_cpu_manager_exclusive_cpu_allocation_count",
			Help: alpha("The total number of CPUs exclusively allocated to containers running on this node")}),
		perNUMA: prom.NewGaugeVec(prom.GaugeOpts{Name: "kubelet_cpu_manager_allocation_per_numa",
			Help: alpha("Number of CPUs allocated per NUMA node")}, []string{"numa_node"}),
		aligned: prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_container_aligned_compute_resources_count",
			Help: alpha("Cumulative number of aligned compute resources allocated to containers by alignment type.")}, []string{"scope", "boundary"}),
		alignedFailures: prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_container_aligned_compute_resources_failure_count",
			Help: alpha("Cumulative number of failures to allocate aligned compute resources to containers by alignment type.")}, []string{"scope", "boundary"}),
		admissions: prom.NewCounter(prom.CounterOpts{Name: "kubelet_topology_manager_admission_requests_total",
			Help: alpha("The number of admission requests where resources have to be aligned.")}),
		admissionError: prom.NewCounter(prom.CounterOpts{Name: "kubelet_topology_manager_admission_errors_total",
			Help: alpha("The number of admission request failures where resources could not be aligned.")}),
		admissionDuration: prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_topology_manager_admission_duration_ms",
			Help: alpha("Duration in milliseconds to serve a pod admission request."), Buckets: topologyAdmissionBuckets}),
		memPinning: prom.NewCounter(prom.CounterOpts{Name: "kubelet_memory_manager_pinning_requests_total",
			Help: alpha("The number of memory pages allocations which required pinning.")}),
		memErrors: prom.NewCounter(prom.CounterOpts{Name: "kubelet_memory_manager_pinning_errors_total",
			Help: alpha("The number of memory pages allocations which required pinning that failed.")}),
	}
}

func (mm managerMetrics) collectors() []prom.Collector {
	return []prom.Collector{mm.pinning, mm.pinningErrors, mm.sharedPool, mm.exclusive, mm.perNUMA, mm.aligned,
		mm.alignedFailures, mm.admissions, mm.admissionError, mm.admissionDuration, mm.memPinning, mm.memErrors}
}

// Pinning implements agent.ResourceMetrics (cpumanager.Metrics):
// kubelet_cpu_manager_pinning_requests_total and _errors_total; under
// full-pcpus-only, kubelet_container_aligned_compute_resources_count (or
// its _failure_count) with scope "container" and boundary
// "physical_cpu", as upstream counts them.
func (m *Metrics) Pinning(failed, fullPCPUs bool) {
	m.managers.pinning.Inc()
	if failed {
		m.managers.pinningErrors.Inc()
	}
	if !fullPCPUs {
		return
	}
	if failed {
		m.managers.alignedFailures.WithLabelValues("container", "physical_cpu").Inc()
		return
	}
	m.managers.aligned.WithLabelValues("container", "physical_cpu").Inc()
}

// Pool implements agent.ResourceMetrics (cpumanager.Metrics):
// kubelet_cpu_manager_shared_pool_size_millicores,
// _exclusive_cpu_allocation_count and _allocation_per_numa.
func (m *Metrics) Pool(sharedMilliCPU int64, exclusive int, byNUMA map[int]int) {
	m.managers.sharedPool.Set(float64(sharedMilliCPU))
	m.managers.exclusive.Set(float64(exclusive))
	for node, n := range byNUMA {
		m.managers.perNUMA.WithLabelValues(strconv.Itoa(node)).Set(float64(n))
	}
}

// TopologyAdmission implements agent.ResourceMetrics:
// kubelet_topology_manager_admission_requests_total, _errors_total and
// _duration_ms (whole milliseconds, as upstream observes them).
func (m *Metrics) TopologyAdmission(d time.Duration, refused bool) {
	m.managers.admissions.Inc()
	if refused {
		m.managers.admissionError.Inc()
	}
	m.managers.admissionDuration.Observe(float64(d.Milliseconds()))
}

// MemoryPinning implements agent.ResourceMetrics (memorymanager.Metrics):
// kubelet_memory_manager_pinning_requests_total and _errors_total.
func (m *Metrics) MemoryPinning(failed bool) {
	m.managers.memPinning.Inc()
	if failed {
		m.managers.memErrors.Inc()
	}
}
