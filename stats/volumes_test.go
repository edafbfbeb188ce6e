package stats_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/stats"
)

// TestSummaryMeasuredVolumes: the volumes the VolumeMeasurer measures
// follow the walked ones, with their name and pvcRef as it gave them;
// they are not ephemeral storage; they are measured with the walk, once
// per period, and forgotten with the pod; the CPU-and-memory summary
// never asks; two summaries share no figure.
func TestSummaryMeasuredVolumes(t *testing.T) {
	n := newNode(t)
	sid, _ := n.runPod("default", "db", "app")
	n.write(filepath.Join(n.volume("uid-db", "kubernetes.io~empty-dir", "scratch"), "a"), 100)
	used := uint64(3 << 30)
	var calls atomic.Int32
	measurer := stats.VolumeMeasurerFunc(func(_ context.Context, uid types.UID) []statsv1alpha1.VolumeStats {
		calls.Add(1)
		if uid != "uid-db" {
			return nil
		}
		capacity, avail, u, inodes, free, iu := uint64(10<<30), uint64(7<<30), used, uint64(1000), uint64(900), uint64(100)
		return []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: &statsv1alpha1.PVCReference{Name: "data-db-0", Namespace: "default"},
			FsStats: statsv1alpha1.FsStats{Time: metav1.NewTime(n.clk.Now()), CapacityBytes: &capacity, AvailableBytes: &avail,
				UsedBytes: &u, Inodes: &inodes, InodesFree: &free, InodesUsed: &iu}}}
	})
	p := n.provider(stats.Options{Volumes: measurer})
	ctx := context.Background()

	_, err := p.Summary(ctx, true)
	require.NoError(t, err)
	assert.Zero(t, calls.Load(), "the CPU-and-memory summary measures no volume")

	summary := func() statsv1alpha1.PodStats {
		s, err := p.Summary(ctx, false)
		require.NoError(t, err)
		require.Len(t, s.Pods, 1)
		return s.Pods[0]
	}
	pod := summary()
	require.Len(t, pod.VolumeStats, 2)
	assert.Equal(t, "scratch", pod.VolumeStats[0].Name, "the walked volumes first")
	assert.Nil(t, pod.VolumeStats[0].PVCRef)
	data := pod.VolumeStats[1]
	assert.Equal(t, "data", data.Name)
	assert.Equal(t, &statsv1alpha1.PVCReference{Name: "data-db-0", Namespace: "default"}, data.PVCRef)
	assert.Equal(t, uint64(10<<30), deref(data.CapacityBytes))
	assert.Equal(t, uint64(3<<30), deref(data.UsedBytes))
	assert.Equal(t, uint64(100), deref(data.InodesUsed))
	assert.True(t, data.Time.Time.Equal(t0))
	assert.Equal(t, uint64(100), deref(pod.EphemeralStorage.UsedBytes), "the emptyDir only: a persistent volume is not ephemeral")
	assert.Equal(t, int32(1), calls.Load())

	*data.UsedBytes = 0
	used = 4 << 30
	n.clk.Step(59 * time.Second)
	pod = summary()
	assert.Equal(t, uint64(3<<30), deref(pod.VolumeStats[1].UsedBytes), "within the period: the last measurement, unchanged by a caller")
	assert.Equal(t, int32(1), calls.Load())
	n.clk.Step(61 * time.Second)
	pod = summary()
	assert.Equal(t, uint64(4<<30), deref(pod.VolumeStats[1].UsedBytes), "two periods: measured again")
	assert.Equal(t, int32(2), calls.Load())

	require.NoError(t, n.rt.StopPodSandbox(ctx, sid))
	_, err = p.Summary(ctx, false)
	require.NoError(t, err)
	assert.Zero(t, p.VolumeWalks(), "forgotten with the pod")
}
