package prometheus_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
)

func newMetrics(t *testing.T) *prometheus.Metrics {
	t.Helper()
	m, err := prometheus.New(prometheus.Options{})
	require.NoError(t, err)
	return m
}

// histogram returns the sample count and sum of the histogram name whose
// labels include want.
func histogram(t *testing.T, reg prom.Gatherer, name string, want map[string]string) (uint64, float64) {
	t.Helper()
	s := series(t, reg, name, want)
	return s.GetHistogram().GetSampleCount(), s.GetHistogram().GetSampleSum()
}

// value returns the value of the counter or gauge name whose labels include
// want; 0 when there is none.
func value(t *testing.T, reg prom.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	s := series(t, reg, name, want)
	return s.GetCounter().GetValue() + s.GetGauge().GetValue()
}

// series returns the first series of name whose labels include want; nil
// when there is none.
func series(t *testing.T, reg prom.Gatherer, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, s := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			return s
		}
	}
	return nil
}

func TestHistograms(t *testing.T) {
	tests := []struct {
		name      string
		observe   func(m *prometheus.Metrics)
		metric    string
		labels    map[string]string
		wantCount uint64
		wantSum   float64
	}{
		{"relist duration", func(m *prometheus.Metrics) {
			m.RelistDuration(20 * time.Millisecond)
			m.RelistDuration(30 * time.Millisecond)
		}, "kubelet_pleg_relist_duration_seconds", nil, 2, 0.05},
		{"relist interval", func(m *prometheus.Metrics) { m.RelistInterval(time.Second) },
			"kubelet_pleg_relist_interval_seconds", nil, 1, 1},
		{"pod start", func(m *prometheus.Metrics) { m.PodStartDuration(1500 * time.Millisecond) },
			"kubelet_pod_start_duration_seconds", nil, 1, 1.5},
		{"work by update type, from the update's start", func(m *prometheus.Metrics) {
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkSync, UpdateType: podworkers.SyncPodSync,
				Took: time.Millisecond, SinceStart: 100 * time.Millisecond, Started: true})
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkSync, UpdateType: podworkers.SyncPodSync,
				SinceStart: 200 * time.Millisecond, Started: true, Err: errors.New("failed")})
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkSync, UpdateType: podworkers.SyncPodCreate,
				SinceStart: time.Second, Started: true})
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkSync, UpdateType: podworkers.SyncPodSync, Took: time.Second})
		}, "kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "sync"}, 2, 0.3},
		{"a pod's last work is terminated", func(m *prometheus.Metrics) {
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkTerminated, UpdateType: podworkers.SyncPodUpdate,
				SinceStart: 250 * time.Millisecond, Started: true})
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkTerminating, UpdateType: podworkers.SyncPodUpdate,
				SinceStart: time.Second, Started: true})
		}, "kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "terminated"}, 1, 0.25},
		{"a kill without a start is not observed", func(m *prometheus.Metrics) {
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkTerminatingRuntime, UpdateType: podworkers.SyncPodKill, Took: time.Second})
			m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkTerminating, UpdateType: podworkers.SyncPodKill,
				SinceStart: 2 * time.Second, Started: true})
		}, "kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "kill"}, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(t)
			tt.observe(m)
			count, sum := histogram(t, m.Registry(), tt.metric, tt.labels)
			assert.Equal(t, tt.wantCount, count)
			assert.InDelta(t, tt.wantSum, sum, 1e-9)
		})
	}
}

func TestCountersAndGauges(t *testing.T) {
	seen := time.Date(2026, 1, 2, 3, 4, 5, 500_000_000, time.UTC)
	tests := []struct {
		name    string
		observe func(m *prometheus.Metrics)
		want    string // the exposition of the metric named first in it
	}{
		{"events by type and reason", func(m *prometheus.Metrics) {
			m.Event(v1.EventTypeNormal, "Started")
			m.Event(v1.EventTypeNormal, "Started")
			m.Event(v1.EventTypeWarning, "BackOff")
		}, `
# HELP kubeletkit_events_total Events recorded by the agent, by type and reason
# TYPE kubeletkit_events_total counter
kubeletkit_events_total{reason="BackOff",type="Warning"} 1
kubeletkit_events_total{reason="Started",type="Normal"} 2
`},
		{"coalesced PLEG events", func(m *prometheus.Metrics) {
			m.EventsCoalesced(3)
			m.EventsCoalesced(2)
		}, `
# HELP kubelet_pleg_discard_events [ALPHA] The number of discard events in PLEG.
# TYPE kubelet_pleg_discard_events counter
kubelet_pleg_discard_events 5
`},
		{"PLEG last seen", func(m *prometheus.Metrics) {
			m.LastSeen(seen.Add(-time.Minute))
			m.LastSeen(seen)
		}, `
# HELP kubelet_pleg_last_seen_seconds [ALPHA] Timestamp in seconds when PLEG was last seen active.
# TYPE kubelet_pleg_last_seen_seconds gauge
kubelet_pleg_last_seen_seconds 1.7673230455e+09
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(t)
			tt.observe(m)
			name := strings.Fields(strings.TrimSpace(tt.want))[2]
			require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(tt.want), name))
		})
	}
}

// node is a Node over canned pods and runtime answers.
type node struct {
	pods    []v1.Pod
	rt      *runtime
	healthy error
}

func (n *node) PodStatuses() []v1.Pod  { return n.pods }
func (n *node) Runtime() agent.Runtime { return n.rt }
func (n *node) Healthy() error         { return n.healthy }
func (n *node) NodeName() string       { return "node1" }

// runtime answers ListPodSandbox and ListContainers, the only methods the
// gauges call; the others are the nil embedded interface's.
type runtime struct {
	agent.Runtime
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	err        error
}

func (r *runtime) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if r.err != nil {
		return nil, r.err
	}
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sandboxes {
		if f.GetState() == nil || f.GetState().GetState() == sb.GetState() {
			out = append(out, sb)
		}
	}
	return out, nil
}

func (r *runtime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.containers, r.err
}

func pod(phase v1.PodPhase) v1.Pod { return v1.Pod{Status: v1.PodStatus{Phase: phase}} }

func TestNodeGauges(t *testing.T) {
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	tests := []struct {
		name string
		node *node
		want string
	}{
		{
			name: "an empty healthy node",
			node: &node{rt: &runtime{}},
			want: `
# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node1"} 1
# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 0
# HELP kubeletkit_pleg_healthy 1 when the PLEG relisted within its threshold and the sync loop is not stuck
# TYPE kubeletkit_pleg_healthy gauge
kubeletkit_pleg_healthy 1
`,
		},
		{
			name: "pods and containers in every state, unhealthy",
			node: &node{
				pods: []v1.Pod{pod(v1.PodRunning), pod(v1.PodRunning), pod(""), pod(v1.PodSucceeded)},
				rt: &runtime{
					sandboxes: []*runtimeapi.PodSandbox{{State: ready}, {State: ready}, {State: notReady}},
					containers: []*runtimeapi.Container{{State: running}, {State: running}, {State: exited},
						{State: runtimeapi.ContainerState_CONTAINER_CREATED}, {State: runtimeapi.ContainerState_CONTAINER_UNKNOWN}},
				},
				healthy: errors.New("[-]pleg failed: relist is late"),
			},
			want: `
# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node1"} 1
# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 2
# HELP kubelet_running_containers [ALPHA] Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 1
kubelet_running_containers{container_state="exited"} 1
kubelet_running_containers{container_state="running"} 2
kubelet_running_containers{container_state="unknown"} 1
# HELP kubeletkit_pods Number of desired pods by phase
# TYPE kubeletkit_pods gauge
kubeletkit_pods{phase="Pending"} 1
kubeletkit_pods{phase="Running"} 2
kubeletkit_pods{phase="Succeeded"} 1
# HELP kubeletkit_pleg_healthy 1 when the PLEG relisted within its threshold and the sync loop is not stuck
# TYPE kubeletkit_pleg_healthy gauge
kubeletkit_pleg_healthy 0
`,
		},
	}
	names := []string{"kubelet_node_name", "kubelet_running_pods", "kubelet_running_containers", "kubeletkit_pods", "kubeletkit_pleg_healthy"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(t)
			require.NoError(t, m.RegisterNode(tt.node))
			require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(tt.want), names...))
		})
	}
}

// A runtime that fails its calls fails their gauges; the handler serves
// the rest.
func TestRuntimeErrorFailsOnlyItsGauges(t *testing.T) {
	m := newMetrics(t)
	require.NoError(t, m.RegisterNode(&node{pods: []v1.Pod{pod(v1.PodRunning)}, rt: &runtime{err: errors.New("runtime down")}}))
	_, err := m.Registry().Gather()
	require.ErrorContains(t, err, "list pod sandboxes: runtime down")
	require.ErrorContains(t, err, "list containers: runtime down")

	code, body := scrape(t, m.Handler())
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `kubeletkit_pods{phase="Running"} 1`)
	assert.Contains(t, body, "kubeletkit_pleg_healthy 1")
	assert.NotContains(t, body, "kubelet_running_pods")
}

func TestRegisterNodeErrors(t *testing.T) {
	m := newMetrics(t)
	require.ErrorIs(t, m.RegisterNode(nil), prometheus.ErrInvalidArgument)
	n := &node{rt: &runtime{}}
	require.NoError(t, m.RegisterNode(n))
	var already prom.AlreadyRegisteredError
	require.ErrorAs(t, m.RegisterNode(n), &already, "a second node on the same registry")
}

// Two Metrics on one registry collide; each on its own does not.
func TestSharedRegistry(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := prometheus.New(prometheus.Options{Registry: reg})
	require.NoError(t, err)
	assert.Same(t, reg, m.Registry())
	_, err = prometheus.New(prometheus.Options{Registry: reg})
	require.Error(t, err)
	newMetrics(t)
	newMetrics(t)
}

func TestHandlerServesEveryName(t *testing.T) {
	m := newMetrics(t)
	require.NoError(t, m.RegisterNode(&node{rt: &runtime{containers: []*runtimeapi.Container{{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}},
		pods: []v1.Pod{pod(v1.PodRunning)}}))
	m.RelistDuration(time.Millisecond)
	m.ObserveWork(podworkers.WorkObservation{Kind: podworkers.WorkSync, SinceStart: time.Millisecond, Started: true})
	m.Event(v1.EventTypeNormal, "Started")
	code, body := scrape(t, m.Handler())
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		"# TYPE kubelet_pleg_relist_duration_seconds histogram\n",
		"# TYPE kubelet_pleg_relist_interval_seconds histogram\n",
		"# TYPE kubelet_pleg_last_seen_seconds gauge\n",
		"# TYPE kubelet_pleg_discard_events counter\n",
		"# TYPE kubelet_pod_start_duration_seconds histogram\n",
		`kubelet_pod_worker_duration_seconds_count{operation_type="sync"} 1` + "\n",
		`kubeletkit_events_total{reason="Started",type="Normal"} 1` + "\n",
		"kubelet_running_pods 0\n",
		`kubelet_running_containers{container_state="running"} 1` + "\n",
		`kubeletkit_pods{phase="Running"} 1` + "\n",
		"kubeletkit_pleg_healthy 1\n",
	} {
		assert.Contains(t, body, want)
	}
}

func scrape(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

// What the agent's optional hooks report is exposed under upstream's names
// and labels; a forgotten pod's probe series are deleted.
func TestProbeStartAndEvictionCounters(t *testing.T) {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	db := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod", UID: "u2"}}
	m := newMetrics(t)
	m.ObserveProbe(web, "web", prober.Readiness, prober.Success)
	m.ObserveProbe(web, "web", prober.Readiness, prober.Success)
	m.ObserveProbe(web, "web", prober.Liveness, prober.Failure)
	m.ObserveProbe(web, "web", prober.Startup, prober.Unknown)
	m.ObserveProbe(db, "db", prober.Readiness, prober.Success)
	m.StartedPod(false)
	m.StartedPod(true)
	m.StartedContainer("init_container", "")
	m.StartedContainer("container", "")
	m.StartedContainer("container", "ErrImagePull")
	m.Evicted("memory.available")

	probes := `
# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="db",namespace="prod",pod="db",pod_uid="u2",probe_type="Readiness",result="successful"} 1
`
	webProbes := `prober_probe_total{container="web",namespace="default",pod="web",pod_uid="u1",probe_type="Liveness",result="failed"} 1
prober_probe_total{container="web",namespace="default",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"} 2
prober_probe_total{container="web",namespace="default",pod="web",pod_uid="u1",probe_type="Startup",result="unknown"} 1
`
	starts := `
# HELP kubelet_started_pods_total [ALPHA] Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 2
# HELP kubelet_started_pods_errors_total [ALPHA] Cumulative number of errors when starting pods
# TYPE kubelet_started_pods_errors_total counter
kubelet_started_pods_errors_total 1
# HELP kubelet_started_containers_total [ALPHA] Cumulative number of containers started
# TYPE kubelet_started_containers_total counter
kubelet_started_containers_total{container_type="container"} 2
kubelet_started_containers_total{container_type="init_container"} 1
# HELP kubelet_started_containers_errors_total [ALPHA] Cumulative number of errors when starting containers
# TYPE kubelet_started_containers_errors_total counter
kubelet_started_containers_errors_total{code="ErrImagePull",container_type="container"} 1
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions by eviction signal
# TYPE kubelet_evictions counter
kubelet_evictions{eviction_signal="memory.available"} 1
`
	names := []string{"kubelet_started_pods_total", "kubelet_started_pods_errors_total",
		"kubelet_started_containers_total", "kubelet_started_containers_errors_total", "kubelet_evictions"}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(starts), append(names, "prober_probe_total")...),
		"the probes are not on /metrics's registry, as upstream serves them on /metrics/probes alone")
	assert.NoError(t, testutil.GatherAndCompare(m.ProbeRegistry(), strings.NewReader(probes+webProbes), "prober_probe_total"))
	m.ForgetProbes(web.UID)
	assert.NoError(t, testutil.GatherAndCompare(m.ProbeRegistry(), strings.NewReader(probes), "prober_probe_total"), "web's probes forgotten")
}
