package agent

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// metrics collects what /metrics serves, in the Prometheus text format, under
// upstream kubelet's metric names. It implements pleg.Metrics and
// podworkers.Metrics; the core stays free of a metrics library.
type metrics struct {
	mu             sync.Mutex
	relistDuration histogram
	relistInterval histogram
	lastSeen       time.Time
	coalesced      int
	podStart       histogram
	workDuration   map[string]*histogram // by operation
	events         map[string]int        // by type/reason
}

var (
	_ pleg.Metrics       = (*metrics)(nil)
	_ podworkers.Metrics = (*metrics)(nil)
)

// Buckets as upstream's default Prometheus buckets (seconds).
var defaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics() *metrics {
	return &metrics{relistDuration: newHistogram(), relistInterval: newHistogram(), podStart: newHistogram(),
		workDuration: map[string]*histogram{}, events: map[string]int{}}
}

// RelistDuration implements pleg.Metrics.
func (m *metrics) RelistDuration(d time.Duration) { m.observe(&m.relistDuration, d) }

// RelistInterval implements pleg.Metrics.
func (m *metrics) RelistInterval(d time.Duration) { m.observe(&m.relistInterval, d) }

// LastSeen implements pleg.Metrics.
func (m *metrics) LastSeen(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastSeen = t
}

// EventsCoalesced implements pleg.Metrics.
func (m *metrics) EventsCoalesced(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.coalesced += n
}

// StreamState implements pleg.Metrics; the agent runs the relisting PLEG.
func (m *metrics) StreamState(pleg.StreamState) {}

// ObserveWork implements podworkers.Metrics.
func (m *metrics) ObserveWork(kind podworkers.WorkKind, d time.Duration, _ error) {
	op := workOperation(kind)
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.workDuration[op]
	if h == nil {
		nh := newHistogram()
		h = &nh
		m.workDuration[op] = h
	}
	h.observe(d.Seconds())
}

// workOperation names a kind of work as upstream's pod worker metric labels
// do.
func workOperation(k podworkers.WorkKind) string {
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

func (m *metrics) event(eventtype, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[eventtype+"/"+reason]++
}

func (m *metrics) podStarted(d time.Duration) { m.observe(&m.podStart, d) }

func (m *metrics) observe(h *histogram, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.observe(d.Seconds())
}

// snapshot is what the agent adds at scrape time.
type snapshot struct {
	runningPods       int
	runningContainers map[string]int // by container_state
	pods              map[string]int // by phase
	healthy           bool
}

// write renders every metric in the Prometheus text exposition format.
func (m *metrics) write(w io.Writer, s snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge(w, "kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, float64(s.runningPods))
	header(w, "kubelet_running_containers", "Number of containers currently running", "gauge")
	for _, k := range sortedKeys(s.runningContainers) {
		sample(w, "kubelet_running_containers", map[string]string{"container_state": k}, float64(s.runningContainers[k]))
	}
	header(w, "kubeletkit_pods", "Number of desired pods by phase", "gauge")
	for _, k := range sortedKeys(s.pods) {
		sample(w, "kubeletkit_pods", map[string]string{"phase": k}, float64(s.pods[k]))
	}
	healthy := 0.0
	if s.healthy {
		healthy = 1
	}
	gauge(w, "kubeletkit_pleg_healthy", "1 when the PLEG relisted within its threshold", nil, healthy)
	if !m.lastSeen.IsZero() {
		gauge(w, "kubelet_pleg_last_seen_seconds", "Timestamp in seconds when PLEG was last seen active", nil, float64(m.lastSeen.UnixNano())/1e9)
	}
	counter(w, "kubelet_pleg_discard_events", "The number of PLEG events coalesced instead of delivered on their own (upstream discarded them)", float64(m.coalesced))
	m.relistDuration.write(w, "kubelet_pleg_relist_duration_seconds", "Duration in seconds for relisting pods in PLEG", nil)
	m.relistInterval.write(w, "kubelet_pleg_relist_interval_seconds", "Interval in seconds between relisting in PLEG", nil)
	m.podStart.write(w, "kubelet_pod_start_duration_seconds", "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run", nil)
	first := true
	for _, op := range sortedKeys(m.workDuration) {
		name := "kubelet_pod_worker_duration_seconds"
		if first {
			header(w, name, "Duration in seconds to sync a single pod, broken down by operation type", "histogram")
			first = false
		}
		m.workDuration[op].samples(w, name, map[string]string{"operation": op})
	}
	header(w, "kubeletkit_events_total", "Events recorded by the agent, by type and reason", "counter")
	for _, k := range sortedKeys(m.events) {
		typ, reason, _ := strings.Cut(k, "/")
		sample(w, "kubeletkit_events_total", map[string]string{"type": typ, "reason": reason}, float64(m.events[k]))
	}
}

type histogram struct {
	counts []uint64 // per bucket, cumulative at write time
	sum    float64
	count  uint64
}

func newHistogram() histogram { return histogram{counts: make([]uint64, len(defaultBuckets))} }

func (h *histogram) observe(v float64) {
	for i, b := range defaultBuckets {
		if v <= b {
			h.counts[i]++
			break
		}
	}
	h.sum += v
	h.count++
}

func (h *histogram) write(w io.Writer, name, help string, labels map[string]string) {
	header(w, name, help, "histogram")
	h.samples(w, name, labels)
}

func (h *histogram) samples(w io.Writer, name string, labels map[string]string) {
	var cum uint64
	for i, b := range defaultBuckets {
		cum += h.counts[i]
		sample(w, name+"_bucket", with(labels, "le", formatFloat(b)), float64(cum))
	}
	sample(w, name+"_bucket", with(labels, "le", "+Inf"), float64(h.count))
	sample(w, name+"_sum", labels, h.sum)
	sample(w, name+"_count", labels, float64(h.count))
}

func with(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for lk, lv := range labels {
		out[lk] = lv
	}
	out[k] = v
	return out
}

func header(w io.Writer, name, help, typ string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func gauge(w io.Writer, name, help string, labels map[string]string, v float64) {
	header(w, name, help, "gauge")
	sample(w, name, labels, v)
}

func counter(w io.Writer, name, help string, v float64) {
	header(w, name, help, "counter")
	sample(w, name, nil, v)
}

func sample(w io.Writer, name string, labels map[string]string, v float64) {
	if len(labels) == 0 {
		fmt.Fprintf(w, "%s %s\n", name, formatFloat(v))
		return
	}
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	fmt.Fprintf(w, "%s{%s} %s\n", name, strings.Join(parts, ","), formatFloat(v))
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
