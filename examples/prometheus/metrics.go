package prometheus

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// ErrInvalidArgument is wrapped by the error of a call given a nil
// dependency.
var ErrInvalidArgument = errors.New("invalid argument")

// Options configure Metrics. The zero value is a fresh registry, a 5s bound
// on a scrape's runtime calls and no error logs.
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

	relistDuration prom.Histogram
	relistInterval prom.Histogram
	lastSeen       prom.Gauge
	discarded      prom.Counter
	podStart       prom.Histogram
	work           *prom.HistogramVec // by operation
	events         *prom.CounterVec   // by type and reason
}

var _ agent.Metrics = (*Metrics)(nil)

// New returns Metrics registered on opts.Registry (or a registry of their
// own). It fails only when that registry already holds one of its names.
func New(opts Options) (*Metrics, error) {
	m := &Metrics{reg: opts.Registry, timeout: opts.ScrapeTimeout, log: opts.Logger}
	if m.reg == nil {
		m.reg = prom.NewRegistry()
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
		Help: "Duration in seconds for relisting pods in PLEG"})
	m.relistInterval = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pleg_relist_interval_seconds",
		Help: "Interval in seconds between relisting in PLEG"})
	m.lastSeen = prom.NewGauge(prom.GaugeOpts{Name: "kubelet_pleg_last_seen_seconds",
		Help: "Timestamp in seconds when PLEG was last seen active"})
	m.discarded = prom.NewCounter(prom.CounterOpts{Name: "kubelet_pleg_discard_events",
		Help: "The number of PLEG events coalesced instead of delivered on their own (upstream discarded them)"})
	m.podStart = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pod_start_duration_seconds",
		Help: "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run"})
	m.work = prom.NewHistogramVec(prom.HistogramOpts{Name: "kubelet_pod_worker_duration_seconds",
		Help: "Duration in seconds to sync a single pod, broken down by operation type"}, []string{"operation"})
	m.events = prom.NewCounterVec(prom.CounterOpts{Name: "kubeletkit_events_total",
		Help: "Events recorded by the agent, by type and reason"}, []string{"type", "reason"})
	for _, c := range []prom.Collector{m.relistDuration, m.relistInterval, m.lastSeen, m.discarded, m.podStart, m.work, m.events} {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("new metrics: %w", err)
		}
	}
	return m, nil
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prom.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats
// (promhttp), for agent.Options.MetricsHandler. A scrape in which some
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

// ObserveWork implements podworkers.Metrics.
func (m *Metrics) ObserveWork(kind podworkers.WorkKind, d time.Duration, _ error) {
	m.work.WithLabelValues(operation(kind)).Observe(d.Seconds())
}

// PodStartDuration implements agent.Metrics.
func (m *Metrics) PodStartDuration(d time.Duration) { m.podStart.Observe(d.Seconds()) }

// Event implements agent.Metrics.
func (m *Metrics) Event(eventtype, reason string) { m.events.WithLabelValues(eventtype, reason).Inc() }

// operation names a kind of pod work as the operation label of upstream's
// kubelet_pod_worker_duration_seconds does: sync, terminating,
// terminating_runtime or terminated.
func operation(k podworkers.WorkKind) string {
	switch k {
	case podworkers.WorkSync:
		return "sync"
	case podworkers.WorkTerminating:
		return "terminating"
	case podworkers.WorkTerminatingRuntime:
		return "terminating_runtime"
	default:
		return "terminated"
	}
}

// errorLog is promhttp's error logger over slog.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Println(v ...any) { l.log.Warn("Metrics scrape", "err", fmt.Sprint(v...)) }
