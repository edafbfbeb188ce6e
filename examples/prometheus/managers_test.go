package prometheus_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cpumanager"
)

// managerSeries are upstream's CPU and topology manager series
// (pkg/kubelet/metrics), served whatever the policies.
var managerSeries = map[string]upstream{
	"kubelet_cpu_manager_pinning_requests_total": {typ: dto.MetricType_COUNTER, help: "[ALPHA] The number of cpu core allocations which required pinning."},
	"kubelet_cpu_manager_pinning_errors_total":   {typ: dto.MetricType_COUNTER, help: "[ALPHA] The number of cpu core allocations which required pinning failed."},
	"kubelet_cpu_manager_shared_pool_size_millicores": {typ: dto.MetricType_GAUGE,
		help: "[ALPHA] The size of the shared CPU pool for non-guaranteed QoS pods, in millicores."},
	"kubelet_cpu_manager_exclusive_cpu_allocation_count": {typ: dto.MetricType_GAUGE,
		help: "[ALPHA] The total number of CPUs exclusively allocated to containers running on this node"},
	"kubelet_topology_manager_admission_requests_total": {typ: dto.MetricType_COUNTER,
		help: "[ALPHA] The number of admission requests where resources have to be aligned."},
	"kubelet_topology_manager_admission_errors_total": {typ: dto.MetricType_COUNTER,
		help: "[ALPHA] The number of admission request failures where resources could not be aligned."},
	"kubelet_memory_manager_pinning_requests_total": {typ: dto.MetricType_COUNTER,
		help: "[ALPHA] The number of memory pages allocations which required pinning."},
	"kubelet_memory_manager_pinning_errors_total": {typ: dto.MetricType_COUNTER,
		help: "[ALPHA] The number of memory pages allocations which required pinning that failed."},
	"kubelet_topology_manager_admission_duration_ms": {typ: dto.MetricType_HISTOGRAM,
		help:    "[ALPHA] Duration in milliseconds to serve a pod admission request.",
		buckets: []float64{.05, .1, .2, .4, .8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2}},
}

// A node under the static CPU manager (4 CPUs, 1 reserved) serves upstream's
// series: a Guaranteed pod's 2 CPUs pinned, the shared pool 1000
// millicores, a pod refused for want of CPUs counted as an error, each
// admission through the topology manager counted and timed.
func TestManagerMetricsOnANode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMetrics(t)
		all := expose(t, m.Handler())
		for name, want := range managerSeries {
			checkSeries(t, name, all[name], want)
		}
		machine, err := cpumanager.NewTopology(1, 2, 2, 1)
		require.NoError(t, err)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Metrics: m,
			Node:      agent.NodeOptions{KubeReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
			Resources: agent.ResourceOptions{CPUManagerPolicy: cpumanager.PolicyStatic, Topology: machine}}})
		pod := func(name string) *v1.Pod {
			r := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("64Mi")}
			return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app",
				Image: "busybox:1.36", Command: []string{"sleep", "3600"}, Resources: v1.ResourceRequirements{Requests: r, Limits: r}}}}}
		}
		n.AddPod(pod("db"))
		n.AddPod(pod("big"))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "big").Status.Phase == v1.PodFailed }))
		assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP kubelet_cpu_manager_allocation_per_numa [ALPHA] Number of CPUs allocated per NUMA node
# TYPE kubelet_cpu_manager_allocation_per_numa gauge
kubelet_cpu_manager_allocation_per_numa{numa_node="0"} 2
# HELP kubelet_cpu_manager_exclusive_cpu_allocation_count [ALPHA] The total number of CPUs exclusively allocated to containers running on this node
# TYPE kubelet_cpu_manager_exclusive_cpu_allocation_count gauge
kubelet_cpu_manager_exclusive_cpu_allocation_count 2
# HELP kubelet_cpu_manager_pinning_errors_total [ALPHA] The number of cpu core allocations which required pinning failed.
# TYPE kubelet_cpu_manager_pinning_errors_total counter
kubelet_cpu_manager_pinning_errors_total 1
# HELP kubelet_cpu_manager_pinning_requests_total [ALPHA] The number of cpu core allocations which required pinning.
# TYPE kubelet_cpu_manager_pinning_requests_total counter
kubelet_cpu_manager_pinning_requests_total 2
# HELP kubelet_cpu_manager_shared_pool_size_millicores [ALPHA] The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.
# TYPE kubelet_cpu_manager_shared_pool_size_millicores gauge
kubelet_cpu_manager_shared_pool_size_millicores 1000
# HELP kubelet_topology_manager_admission_errors_total [ALPHA] The number of admission request failures where resources could not be aligned.
# TYPE kubelet_topology_manager_admission_errors_total counter
kubelet_topology_manager_admission_errors_total 1
# HELP kubelet_topology_manager_admission_requests_total [ALPHA] The number of admission requests where resources have to be aligned.
# TYPE kubelet_topology_manager_admission_requests_total counter
kubelet_topology_manager_admission_requests_total 2
`), "kubelet_cpu_manager_allocation_per_numa", "kubelet_cpu_manager_exclusive_cpu_allocation_count", "kubelet_cpu_manager_pinning_errors_total",
			"kubelet_cpu_manager_pinning_requests_total", "kubelet_cpu_manager_shared_pool_size_millicores",
			"kubelet_topology_manager_admission_errors_total", "kubelet_topology_manager_admission_requests_total"))
		count, _ := histogram(t, m.Registry(), "kubelet_topology_manager_admission_duration_ms", nil)
		assert.Equal(t, uint64(2), count)
	})
}
