package prometheus_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/prober"
)

// upstream is how upstream kubelet v1.36 defines a metric we serve under
// its name: type, help (without component-base's "[ALPHA] " prefix, which
// our expositions leave out as for every other series), labels and, for a
// histogram, buckets.
type upstream struct {
	typ     dto.MetricType
	help    string
	labels  []string
	buckets []float64
}

var (
	// prom.DefBuckets, component-base's default.
	defBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// pkg/kubelet/metrics' podStartupDurationBuckets.
	podStartupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900,
		1200, 1800, 2700, 3600}
	// pkg/kubelet/metrics' imagePullDurationBuckets.
	imagePullBuckets = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
)

// probeSeries are /metrics/probes' series (pkg/kubelet/prober's
// ProberResults and ProberDuration, and component-base's process start
// time, registered beside them in pkg/kubelet/server).
var probeSeries = map[string]upstream{
	"prober_probe_total": {typ: dto.MetricType_COUNTER,
		help:   "[ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
		labels: []string{"container", "namespace", "pod", "pod_uid", "probe_type", "result"}},
	"prober_probe_duration_seconds": {typ: dto.MetricType_HISTOGRAM, help: "[ALPHA] Duration in seconds for a probe response.",
		labels: []string{"container", "namespace", "pod", "probe_type"}, buckets: defBuckets},
	"process_start_time_seconds": {typ: dto.MetricType_GAUGE, help: "[ALPHA] Start time of the process since unix epoch in seconds."},
}

// startSeries are the pod start and image pull series of pkg/kubelet/metrics.
var startSeries = map[string]upstream{
	"kubelet_pod_start_sli_duration_seconds": {typ: dto.MetricType_HISTOGRAM,
		help: "[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod " +
			"creation timestamp to when all its containers are reported as started and observed via watch",
		buckets: podStartupBuckets},
	"kubelet_pod_start_total_duration_seconds": {typ: dto.MetricType_HISTOGRAM,
		help: "[ALPHA] Duration in seconds to start a pod since creation, including time to pull images and run init containers, " +
			"measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		buckets: podStartupBuckets},
	"kubelet_image_pull_duration_seconds": {typ: dto.MetricType_HISTOGRAM, help: "[ALPHA] Duration in seconds to pull an image.",
		labels: []string{"image_size_in_bytes"}, buckets: imagePullBuckets},
	"kubelet_pod_start_duration_seconds": {typ: dto.MetricType_HISTOGRAM,
		help:    "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		buckets: podStartupBuckets},
}

// expose GETs h and parses the text exposition it serves.
func expose(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	require.NoError(t, err, rec.Body.String())
	return mfs
}

// checkSeries says whether mf is as upstream defines it: type, help, the
// label names of each series and, for a histogram, its buckets.
func checkSeries(t *testing.T, name string, mf *dto.MetricFamily, want upstream) {
	t.Helper()
	if !assert.NotNil(t, mf, "%s is served", name) {
		return
	}
	assert.Equal(t, want.typ, mf.GetType(), name)
	assert.Equal(t, want.help, mf.GetHelp(), name)
	require.NotEmpty(t, mf.GetMetric(), name)
	for _, s := range mf.GetMetric() {
		var labels []string
		for _, l := range s.GetLabel() {
			labels = append(labels, l.GetName())
		}
		assert.Equal(t, want.labels, labels, name)
		if want.typ != dto.MetricType_HISTOGRAM {
			continue
		}
		var bounds []float64
		for _, b := range s.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the text format's +Inf bucket
				bounds = append(bounds, b.GetUpperBound())
			}
		}
		assert.Equal(t, want.buckets, bounds, name)
	}
}

// /metrics/probes (ProbeHandler) serves the probe series under upstream's
// names, help texts, labels and buckets, and /metrics (Handler) none of
// them, as upstream; the start and pull histograms are on /metrics.
func TestExpositionAgainstUpstream(t *testing.T) {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	m := newMetrics(t)
	m.ObserveProbe(web, "web", prober.Readiness, prober.Success)
	m.ObserveProbeDuration(web, "web", prober.Readiness, prober.Success, 30*time.Millisecond)
	m.PodStartDuration(2 * time.Second)
	m.PodStartTotalDuration(12 * time.Second)
	m.PodStartSLIDuration(2 * time.Second)
	m.ImagePulled(10*time.Second, 150<<20)

	probes := expose(t, m.ProbeHandler())
	for name, want := range probeSeries {
		checkSeries(t, name, probes[name], want)
	}
	assert.Len(t, probes, len(probeSeries), "nothing else on /metrics/probes")
	assert.InDelta(t, float64(time.Now().Unix()), probes["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue(), 3600,
		"the process started within the hour")

	all := expose(t, m.Handler())
	for name := range probeSeries {
		assert.NotContains(t, all, name, "upstream serves it on /metrics/probes only")
	}
	for name, want := range startSeries {
		checkSeries(t, name, all[name], want)
	}
}

// prober_probe_duration_seconds times the runs that succeeded or whose
// result is unknown, not the failures, as upstream; a forgotten pod's
// series go.
func TestProbeDuration(t *testing.T) {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	db := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod", UID: "u2"}}
	m := newMetrics(t)
	m.ObserveProbeDuration(web, "web", prober.Readiness, prober.Success, 20*time.Millisecond)
	m.ObserveProbeDuration(web, "web", prober.Readiness, prober.Unknown, 2*time.Second)
	m.ObserveProbeDuration(web, "web", prober.Liveness, prober.Failure, time.Second)
	m.ObserveProbeDuration(db, "db", prober.Startup, prober.Success, 300*time.Millisecond)

	n, sum := histogram(t, m.ProbeRegistry(), "prober_probe_duration_seconds", map[string]string{"pod": "web", "probe_type": "Readiness"})
	assert.Equal(t, uint64(2), n)
	assert.InDelta(t, 2.02, sum, 1e-9)
	assert.Nil(t, series(t, m.ProbeRegistry(), "prober_probe_duration_seconds", map[string]string{"probe_type": "Liveness"}), "a failure is not timed")

	m.ForgetProbes(web.UID)
	assert.Nil(t, series(t, m.ProbeRegistry(), "prober_probe_duration_seconds", map[string]string{"pod": "web"}))
	n, _ = histogram(t, m.ProbeRegistry(), "prober_probe_duration_seconds", map[string]string{"pod": "db"})
	assert.Equal(t, uint64(1), n, "another pod's stay")
}

// image_size_in_bytes is upstream's bucket of the image's size: each bound
// belongs to the range below it, 0 is "N/A".
func TestImageSizeBucket(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for size, want := range map[uint64]string{
		0: "N/A", 1: "0-10MB", 10 * mib: "0-10MB", 10*mib + 1: "10MB-100MB", 100 * mib: "10MB-100MB",
		300 * mib: "100MB-500MB", 500*mib + 1: "500MB-1GB", gib: "500MB-1GB", 2 * gib: "1GB-5GB", 7 * gib: "5GB-10GB",
		15 * gib: "10GB-20GB", 25 * gib: "20GB-30GB", 35 * gib: "30GB-40GB", 50 * gib: "40GB-60GB", 100 * gib: "60GB-100GB",
		100*gib + 1: "GT100GB", 1 << 50: "GT100GB",
	} {
		assert.Equal(t, want, prometheus.ImageSizeBucket(size), "%d bytes", size)
	}
}

// The pod start and pull histograms observe what the agent's hooks tell.
func TestPodStartAndPullHistograms(t *testing.T) {
	m := newMetrics(t)
	m.PodStartTotalDuration(12 * time.Second)
	m.PodStartSLIDuration(2 * time.Second)
	m.ImagePulled(10*time.Second, 150<<20)
	m.ImagePulled(3*time.Second, 0)
	want := `
# HELP kubelet_image_pull_duration_seconds [ALPHA] Duration in seconds to pull an image.
# TYPE kubelet_image_pull_duration_seconds histogram
`
	for _, size := range []struct {
		label string
		secs  float64
	}{{"100MB-500MB", 10}, {"N/A", 3}} {
		for _, b := range imagePullBuckets {
			n := 0
			if size.secs <= b {
				n = 1
			}
			want += fmt.Sprintf("kubelet_image_pull_duration_seconds_bucket{image_size_in_bytes=%q,le=\"%g\"} %d\n", size.label, b, n)
		}
		want += fmt.Sprintf("kubelet_image_pull_duration_seconds_bucket{image_size_in_bytes=%q,le=\"+Inf\"} 1\n", size.label)
		want += fmt.Sprintf("kubelet_image_pull_duration_seconds_sum{image_size_in_bytes=%q} %g\n", size.label, size.secs)
		want += fmt.Sprintf("kubelet_image_pull_duration_seconds_count{image_size_in_bytes=%q} 1\n", size.label)
	}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kubelet_image_pull_duration_seconds"))
	for name, secs := range map[string]float64{"kubelet_pod_start_total_duration_seconds": 12, "kubelet_pod_start_sli_duration_seconds": 2} {
		n, sum := histogram(t, m.Registry(), name, nil)
		assert.Equal(t, uint64(1), n, name)
		assert.Equal(t, secs, sum, name)
	}
}

// A whole node (agent/agenttest) whose container fails its liveness probe
// counts prober_probe_total{result="failed"} through the agent's probe
// hook, served on /metrics/probes and not on /metrics.
func TestFailingLivenessProbeOnANode(t *testing.T) {
	synctest.Test(t, failingLivenessProbeOnANode)
}

func failingLivenessProbeOnANode(t *testing.T) {
	m := newMetrics(t)
	n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Metrics: m,
		HTTP: agent.HTTPOptions{MetricsHandler: m.Handler(), ProbeMetricsHandler: m.ProbeHandler()}},
		Rules: []fake.Rule{{Command: []string{"false"}, Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}}}})
	pod := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}},
			PeriodSeconds: 1, FailureThreshold: 1}}}}})
	failed := map[string]string{"probe_type": "Liveness", "result": "failed", "pod": "live", "container": "app",
		"namespace": "default", "pod_uid": string(pod.UID)}
	require.True(t, n.StepUntil(time.Minute, func() bool { return value(t, m.ProbeRegistry(), "prober_probe_total", failed) >= 1 }),
		"a failed liveness probe counted")

	probes := expose(t, m.ProbeHandler())
	require.Contains(t, probes, "prober_probe_total")
	var got float64
	for _, s := range probes["prober_probe_total"].GetMetric() {
		if labelsOf(s)["result"] == "failed" {
			got += s.GetCounter().GetValue()
		}
	}
	assert.GreaterOrEqual(t, got, 1.0, "served on /metrics/probes")
	assert.NotContains(t, expose(t, m.Handler()), "prober_probe_total")
	assert.Nil(t, series(t, m.ProbeRegistry(), "prober_probe_duration_seconds", map[string]string{"probe_type": "Liveness"}),
		"a failed run is not timed")
}

func labelsOf(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

var _ prom.Gatherer = (*prom.Registry)(nil)
