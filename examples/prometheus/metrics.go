package prometheus

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// ErrInvalidArgument is wrapped by the error of a call given a nil
// dependency.
var ErrInvalidArgument = errors.New("invalid argument")

// Options configure Metrics. The zero value is a fresh registry, a 5s bound
// on a scrape's runtime calls, the real clock and no error logs.
type Options struct {
	// Registry receives every metric; nil means a new *prom.Registry of
	// the Metrics' own. Give one to serve other collectors (Go runtime,
	// process) beside the agent's on the same Handler.
	Registry *prom.Registry
	// ScrapeTimeout bounds the runtime calls (ListPodSandbox,
	// ListContainers) that a scrape makes for the node's gauges; 0 means
	// 5s.
	ScrapeTimeout time.Duration
	// Logger receives the errors of collecting and serving a scrape; nil
	// discards them.
	Logger *slog.Logger
	// Clock times the runtime's operations (InstrumentRuntime); nil means
	// the real clock.
	Clock clock.PassiveClock
}

// Metrics is an agent.Metrics that keeps the agent's measurements in
// client_golang collectors on its own registry, under upstream kubelet's
// metric names where they exist. Its methods are safe for concurrent use and
// do not block; the node's gauges are read at scrape time once RegisterNode
// has named the node.
type Metrics struct {
	reg     *prom.Registry
	timeout time.Duration
	log     *slog.Logger
	clock   clock.PassiveClock

	relistDuration prom.Histogram
	relistInterval prom.Histogram
	lastSeen       prom.Gauge
	discarded      prom.Counter
	podStart       prom.Histogram
	work           *prom.HistogramVec // by operation
	events         *prom.CounterVec   // by type and reason

	runtimeOps        *prom.CounterVec   // by operation_type
	runtimeDuration   *prom.HistogramVec // by operation_type
	runtimeErrors     *prom.CounterVec   // by operation_type
	startedPods       prom.Counter
	startedPodsErrors prom.Counter
	startedContainers *prom.CounterVec // by container_type
	startErrors       *prom.CounterVec // by container_type, code
	evictions         *prom.CounterVec // by eviction_signal

	podStartTotal prom.Histogram
	podStartSLI   prom.Histogram
	imagePulls    *prom.HistogramVec // by image_size_in_bytes

	volumes  volumeMetrics
	managers managerMetrics // the CPU and topology managers'
	dra      draMetrics
	// podResources are the pod-resources API's calls.
	podResources podResourcesMetrics

	// probes is /metrics/probes' registry, apart from reg as upstream's.
	probes *probeMetrics
}

var (
	_ agent.Metrics         = (*Metrics)(nil)
	_ agent.ProbeMetrics    = (*Metrics)(nil)
	_ agent.StartMetrics    = (*Metrics)(nil)
	_ agent.EvictionMetrics = (*Metrics)(nil)

	_ agent.ProbeDurationMetrics = (*Metrics)(nil)
	_ agent.PodStartMetrics      = (*Metrics)(nil)
	_ agent.ImagePullMetrics     = (*Metrics)(nil)
)

// New returns Metrics registered on opts.Registry (or a registry of their
// own). It fails only when that registry already holds one of its names.
func New(opts Options) (*Metrics, error) {
	m := &Metrics{reg: opts.Registry, timeout: opts.ScrapeTimeout, log: opts.Logger, clock: opts.Clock}
	if m.reg == nil {
		m.reg = prom.NewRegistry()
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.timeout <= 0 {
		m.timeout = 5 * time.Second
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	// prom.DefBuckets, as upstream's histograms without buckets of their
	// own: 5ms to 10s.
	m.relistDuration = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pleg_relist_duration_seconds",
		Help: alpha("Duration in seconds for relisting pods in PLEG.")})
	m.relistInterval = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pleg_relist_interval_seconds",
		Help: alpha("Interval in seconds between relisting in PLEG.")})
	m.lastSeen = prom.NewGauge(prom.GaugeOpts{Name: "kubelet_pleg_last_seen_seconds",
		Help: alpha("Timestamp in seconds when PLEG was last seen active.")})
	m.discarded = prom.NewCounter(prom.CounterOpts{Name: "kubelet_pleg_discard_events",
		Help: alpha("The number of discard events in PLEG.")})
	m.podStart = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pod_start_duration_seconds",
		Help:    alpha("Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run"),
		Buckets: podStartupBuckets})
	m.work = prom.NewHistogramVec(prom.HistogramOpts{Name: "kubelet_pod_worker_duration_seconds",
		Help: alpha("Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync")}, []string{"operation_type"})
	m.events = prom.NewCounterVec(prom.CounterOpts{Name: "kubeletkit_events_total",
		Help: "Events recorded by the agent, by type and reason"}, []string{"type", "reason"})
	m.newRuntimeAndStartMetrics()
	m.newPodStartAndPullMetrics()
	m.volumes = newVolumeMetrics()
	m.managers = newManagerMetrics()
	m.dra = newDRAMetrics()
	m.podResources = newPodResourcesMetrics()
	collectors := append(append(m.managers.collectors(), m.dra.collectors()...), m.podResources.collectors()...)
	for _, c := range append([]prom.Collector{m.relistDuration, m.relistInterval, m.lastSeen, m.discarded, m.podStart, m.work, m.events,
		m.runtimeOps, m.runtimeDuration, m.runtimeErrors, m.startedPods, m.startedPodsErrors,
		m.startedContainers, m.startErrors, m.evictions, m.podStartTotal, m.podStartSLI, m.imagePulls,
		m.volumes.operations, m.volumes.totals}, collectors...) {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("new metrics: %w", err)
		}
	}
	var err error
	if m.probes, err = newProbeMetrics(); err != nil {
		return nil, fmt.Errorf("new metrics: %w", err)
	}
	return m, nil
}

// Registry returns the registry the metrics are on (the probe metrics
// excepted: ProbeRegistry).
func (m *Metrics) Registry() *prom.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats
// (promhttp), for agent.Options.HTTP.MetricsHandler. A scrape in which some
// metric failed (the runtime did not answer) serves the others and logs
// the error.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: errorLog{m.log}, ErrorHandling: promhttp.ContinueOnError})
}

// RelistDuration implements pleg.Metrics.
func (m *Metrics) RelistDuration(d time.Duration) { m.relistDuration.Observe(d.Seconds()) }

// RelistInterval implements pleg.Metrics.
func (m *Metrics) RelistInterval(d time.Duration) { m.relistInterval.Observe(d.Seconds()) }

// LastSeen implements pleg.Metrics.
func (m *Metrics) LastSeen(t time.Time) { m.lastSeen.Set(float64(t.UnixNano()) / 1e9) }

// EventsCoalesced implements pleg.Metrics.
func (m *Metrics) EventsCoalesced(n int) { m.discarded.Add(float64(n)) }

// StreamState implements pleg.Metrics; the evented PLEG's stream state is
// not exposed.
func (m *Metrics) StreamState(pleg.StreamState) {}

// ObserveWork implements podworkers.Metrics: upstream's
// kubelet_pod_worker_duration_seconds, from the time the agent began
// handling the update to the end of the work (work without a start, as
// upstream's kills of removed and runtime-only pods, is not observed).
func (m *Metrics) ObserveWork(o podworkers.WorkObservation) {
	if !o.Started {
		return
	}
	m.work.WithLabelValues(operationType(o)).Observe(o.SinceStart.Seconds())
}

// PodStartDuration implements agent.Metrics.
func (m *Metrics) PodStartDuration(d time.Duration) { m.podStart.Observe(d.Seconds()) }

// Event implements agent.Metrics.
func (m *Metrics) Event(eventtype, reason string) { m.events.WithLabelValues(eventtype, reason).Inc() }

// newRuntimeAndStartMetrics makes the collectors of the runtime's
// operations, the starts and the evictions, under upstream's names, labels
// and buckets.
func (m *Metrics) newRuntimeAndStartMetrics() {
	op := []string{"operation_type"}
	m.runtimeOps = prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_runtime_operations_total",
		Help: alpha("Cumulative number of runtime operations by operation type.")}, op)
	m.runtimeDuration = prom.NewHistogramVec(prom.HistogramOpts{Name: "kubelet_runtime_operations_duration_seconds",
		Help:    alpha("Duration in seconds of runtime operations. Broken down by operation type."),
		Buckets: prom.ExponentialBuckets(.005, 2.5, 14)}, op)
	m.runtimeErrors = prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_runtime_operations_errors_total",
		Help: alpha("Cumulative number of runtime operation errors by operation type.")}, op)
	m.startedPods = prom.NewCounter(prom.CounterOpts{Name: "kubelet_started_pods_total",
		Help: alpha("Cumulative number of pods started")})
	m.startedPodsErrors = prom.NewCounter(prom.CounterOpts{Name: "kubelet_started_pods_errors_total",
		Help: alpha("Cumulative number of errors when starting pods")})
	m.startedContainers = prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_started_containers_total",
		Help: alpha("Cumulative number of containers started")}, []string{"container_type"})
	m.startErrors = prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_started_containers_errors_total",
		Help: alpha("Cumulative number of errors when starting containers")}, []string{"container_type", "code"})
	m.evictions = prom.NewCounterVec(prom.CounterOpts{Name: "kubelet_evictions",
		Help: alpha("Cumulative number of pod evictions by eviction signal")}, []string{"eviction_signal"})
}

// StartedPod implements agent.StartMetrics: kubelet_started_pods_total,
// and kubelet_started_pods_errors_total when it failed.
func (m *Metrics) StartedPod(failed bool) {
	m.startedPods.Inc()
	if failed {
		m.startedPodsErrors.Inc()
	}
}

// StartedContainer implements agent.StartMetrics:
// kubelet_started_containers_total by container_type, and
// kubelet_started_containers_errors_total by container_type and code (the
// reason it failed with) when code is not "".
func (m *Metrics) StartedContainer(containerType, code string) {
	m.startedContainers.WithLabelValues(containerType).Inc()
	if code != "" {
		m.startErrors.WithLabelValues(containerType, code).Inc()
	}
}

// Evicted implements agent.EvictionMetrics: a pod evicted for signal
// (memory.available, nodefs.available, ...; emptydirfs.limit,
// ephemeralpodfs.limit, ephemeralcontainerfs.limit for local storage
// limits) in kubelet_evictions.
func (m *Metrics) Evicted(signal string) { m.evictions.WithLabelValues(signal).Inc() }

// operationType is the operation_type label of upstream's
// kubelet_pod_worker_duration_seconds: "terminated" for the last work of a
// pod, otherwise the type of the update the work took (create, update, sync
// or kill).
func operationType(o podworkers.WorkObservation) string {
	if o.Kind == podworkers.WorkTerminated {
		return "terminated"
	}
	return o.UpdateType.String()
}

// errorLog is promhttp's error logger over slog.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Println(v ...any) { l.log.Warn("Metrics scrape", "err", fmt.Sprint(v...)) }

// alpha and stable give a help text as upstream serves it: component-base
// prefixes the help of every metric with its stability level.
func alpha(help string) string { return "[ALPHA] " + help }

func stable(help string) string { return "[STABLE] " + help }
