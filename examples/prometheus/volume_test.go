package prometheus_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/volume"
)

// volumeSeries are upstream's volume manager series: pkg/volume/util's
// storageOperationMetric and pkg/kubelet/volumemanager/metrics'
// totalVolumesDesc.
var volumeSeries = map[string]upstream{
	"storage_operation_duration_seconds": {typ: dto.MetricType_HISTOGRAM, help: "[ALPHA] Storage operation duration",
		labels:  []string{"migrated", "operation_name", "status", "volume_plugin"},
		buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}},
	"volume_manager_total_volumes": {typ: dto.MetricType_GAUGE, help: "[ALPHA] Number of volumes in Volume Manager",
		labels: []string{"plugin_name", "state"}},
}

// The volume hooks are served under upstream's names, help texts, labels
// and buckets: an operation's status is "success" or "fail-unknown",
// migrated "false"; the gauge has a series per plugin and state that holds
// volumes, read at scrape time.
func TestVolumeMetricsExposition(t *testing.T) {
	m := newMetrics(t)
	assert.NotContains(t, expose(t, m.Handler()), "volume_manager_total_volumes", "no series before CountVolumes")

	counts := []volume.VolumeCount{{Plugin: volume.EmptyDirPluginName, Desired: 1, Actual: 1},
		{Plugin: "kubernetes.io/csi:csi.example.com", Desired: 2}}
	m.CountVolumes(func() []volume.VolumeCount { return counts })
	m.ObserveVolumeOperation(volume.OpVerifyAttached, volume.EmptyDirPluginName, 0, nil)
	m.ObserveVolumeOperation(volume.OpMount, volume.EmptyDirPluginName, 2*time.Millisecond, nil)
	m.ObserveVolumeOperation(volume.OpMount, "kubernetes.io/csi:csi.example.com", 3*time.Second, errors.New("NodePublishVolume: no"))

	all := expose(t, m.Handler())
	for name, want := range volumeSeries {
		checkSeries(t, name, all[name], want)
	}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP volume_manager_total_volumes [ALPHA] Number of volumes in Volume Manager
# TYPE volume_manager_total_volumes gauge
volume_manager_total_volumes{plugin_name="kubernetes.io/csi:csi.example.com",state="desired_state_of_world"} 2
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="desired_state_of_world"} 1
`), "volume_manager_total_volumes"))

	for _, tt := range []struct {
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{map[string]string{"operation_name": "verify_controller_attached_volume", "status": "success", "volume_plugin": "kubernetes.io/empty-dir", "migrated": "false"}, 1, 0},
		{map[string]string{"operation_name": "volume_mount", "status": "success", "volume_plugin": "kubernetes.io/empty-dir", "migrated": "false"}, 1, 0.002},
		{map[string]string{"operation_name": "volume_mount", "status": "fail-unknown", "volume_plugin": "kubernetes.io/csi:csi.example.com", "migrated": "false"}, 1, 3},
	} {
		n, sum := histogram(t, m.Registry(), "storage_operation_duration_seconds", tt.labels)
		assert.Equal(t, tt.count, n, "%v", tt.labels)
		assert.InDelta(t, tt.sum, sum, 1e-9, "%v", tt.labels)
	}

	counts = nil
	assert.NotContains(t, expose(t, m.Handler()), "volume_manager_total_volumes", "read at every scrape")
}

// A whole node (agent/agenttest) running a pod with an emptyDir serves,
// as upstream's scrape of such a node does,
// volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="actual_state_of_world"} 1
// and a storage_operation_duration_seconds sample of its volume_mount;
// once the pod is gone its volume is unmounted and no longer counted.
func TestVolumeMetricsOnANode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMetrics(t)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Metrics: m, HTTP: agent.HTTPOptions{MetricsHandler: m.Handler()}}})
		pod := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cache"}, Spec: v1.PodSpec{
			Volumes:    []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}})
		require.True(t, n.StepUntil(time.Minute, func() bool {
			p := n.Pod(pod.Namespace, pod.Name)
			return p != nil && p.Status.Phase == v1.PodRunning
		}), "pod running")

		emptyDir := map[string]string{"plugin_name": volume.EmptyDirPluginName}
		assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP volume_manager_total_volumes [ALPHA] Number of volumes in Volume Manager
# TYPE volume_manager_total_volumes gauge
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="desired_state_of_world"} 1
`), "volume_manager_total_volumes"))
		for _, op := range []string{"verify_controller_attached_volume", "volume_mount"} {
			count, _ := histogram(t, m.Registry(), "storage_operation_duration_seconds",
				map[string]string{"operation_name": op, "status": "success", "volume_plugin": volume.EmptyDirPluginName, "migrated": "false"})
			assert.Equal(t, uint64(1), count, op)
		}

		n.DeletePodWithGrace(pod.Namespace, pod.Name, 0)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return series(t, m.Registry(), "volume_manager_total_volumes", emptyDir) == nil
		}), "the volume no longer counted")
		count, _ := histogram(t, m.Registry(), "storage_operation_duration_seconds",
			map[string]string{"operation_name": "volume_unmount", "status": "success", "volume_plugin": volume.EmptyDirPluginName})
		assert.Equal(t, uint64(1), count)
	})
}
