package prometheus

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/prober"
)

// probeMetrics are the series upstream serves on /metrics/probes, on a
// registry of their own as upstream's.
type probeMetrics struct {
	reg      *prom.Registry
	total    *prom.CounterVec   // by probe_type, result, container, pod, namespace, pod_uid
	duration *prom.HistogramVec // by probe_type, container, pod, namespace

	mu    sync.Mutex
	timed map[types.UID]types.NamespacedName // the pods with durations, to forget them by UID
}

func newProbeMetrics() (*probeMetrics, error) {
	p := &probeMetrics{reg: prom.NewRegistry(), timed: map[types.UID]types.NamespacedName{}}
	p.total = prom.NewCounterVec(prom.CounterOpts{Name: "prober_probe_total",
		Help: alpha("Cumulative number of a liveness, readiness or startup probe for a container by result.")},
		[]string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	// prom.DefBuckets, as upstream's, which gives none.
	p.duration = prom.NewHistogramVec(prom.HistogramOpts{Name: "prober_probe_duration_seconds",
		Help: alpha("Duration in seconds for a probe response.")},
		[]string{"probe_type", "container", "pod", "namespace"})
	cs := []prom.Collector{p.total, p.duration}
	// Upstream registers the process's start time beside them.
	if start, ok := processStartTime(); ok {
		cs = append(cs, prom.NewGaugeFunc(prom.GaugeOpts{Name: "process_start_time_seconds",
			Help: alpha("Start time of the process since unix epoch in seconds.")}, func() float64 { return start }))
	}
	for _, c := range cs {
		if err := p.reg.Register(c); err != nil {
			return nil, fmt.Errorf("probe metrics: %w", err)
		}
	}
	return p, nil
}

// processStartTime is when this process started, in seconds since the Unix
// epoch, read from /proc/self/stat; false where there is no procfs.
func processStartTime() (float64, bool) {
	self, err := procfs.Self()
	if err != nil {
		return 0, false
	}
	st, err := self.Stat()
	if err != nil {
		return 0, false
	}
	start, err := st.StartTime()
	if err != nil {
		return 0, false
	}
	return start, true
}

// ProbeHandler serves the probe metrics, upstream's /metrics/probes, for
// agent.Options.HTTP.ProbeMetricsHandler: prober_probe_total,
// prober_probe_duration_seconds and process_start_time_seconds, from a
// registry of their own (ProbeRegistry), as upstream keeps them off
// /metrics.
func (m *Metrics) ProbeHandler() http.Handler {
	return promhttp.HandlerFor(m.probes.reg, promhttp.HandlerOpts{ErrorLog: errorLog{m.log}, ErrorHandling: promhttp.ContinueOnError})
}

// ProbeRegistry returns the registry of the probe metrics (ProbeHandler).
func (m *Metrics) ProbeRegistry() *prom.Registry { return m.probes.reg }

// probeResult is upstream's result label of prober_probe_total.
func probeResult(r prober.Result) string {
	switch r {
	case prober.Success:
		return "successful"
	case prober.Failure:
		return "failed"
	default:
		return "unknown"
	}
}

// ObserveProbe implements agent.ProbeMetrics: prober_probe_total, by the
// probe's type (Liveness, Readiness, Startup), its result (successful,
// failed, unknown), and the container and pod.
func (m *Metrics) ObserveProbe(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result) {
	m.probes.total.WithLabelValues(t.String(), probeResult(r), container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
}

// ObserveProbeDuration implements agent.ProbeDurationMetrics:
// prober_probe_duration_seconds by the probe's type and the container and
// pod, for the runs that succeeded or whose result is unknown; as
// upstream's, a failed run is not timed.
func (m *Metrics) ObserveProbeDuration(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result, d time.Duration) {
	if r == prober.Failure {
		return
	}
	p := m.probes
	p.mu.Lock()
	p.timed[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p.mu.Unlock()
	p.duration.WithLabelValues(t.String(), container, pod.Name, pod.Namespace).Observe(d.Seconds())
}

// ForgetProbes implements agent.ProbeMetrics: the pod's prober_probe_total
// and prober_probe_duration_seconds series are deleted, as upstream deletes
// a probe worker's when it stops. (The durations have no pod_uid: a pod of
// the same name and namespace made again takes up its predecessor's.)
func (m *Metrics) ForgetProbes(uid types.UID) {
	m.probes.forget(uid)
}

func (p *probeMetrics) forget(uid types.UID) {
	p.mu.Lock()
	name, timed := p.timed[uid]
	delete(p.timed, uid)
	p.mu.Unlock()
	if timed {
		p.duration.DeletePartialMatch(prom.Labels{"pod": name.Name, "namespace": name.Namespace})
	}
	p.total.DeletePartialMatch(prom.Labels{"pod_uid": string(uid)})
}
