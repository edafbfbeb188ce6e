package evictiontest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

func TestStatsReturnsIndependentCopies(t *testing.T) {
	f := &evictiontest.Stats{}
	n := uint64(3)
	f.Set(stats.Summary{
		Node: stats.NodeStats{Memory: &stats.MemoryStats{AvailableBytes: 1}},
		Pods: []stats.PodStats{{UID: "u", ProcessCount: &n, Containers: []stats.ContainerStats{{Name: "c", Logs: &stats.FsStats{UsedBytes: 5}}}}},
	})
	a, err := f.Get(context.Background())
	require.NoError(t, err)
	a.Node.Memory.AvailableBytes = 99
	*a.Pods[0].ProcessCount = 99
	a.Pods[0].Containers[0].Logs.UsedBytes = 99
	b, err := f.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), b.Node.Memory.AvailableBytes)
	assert.Equal(t, uint64(3), *b.Pods[0].ProcessCount)
	assert.Equal(t, uint64(5), b.Pods[0].Containers[0].Logs.UsedBytes)

	f.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 7 })
	c, _ := f.Get(context.Background())
	assert.Equal(t, uint64(7), c.Node.Memory.AvailableBytes)
	f.SetError(errors.New("boom"))
	_, err = f.Get(context.Background())
	assert.EqualError(t, err, "boom")
	assert.Equal(t, 4, f.Calls())
}

func TestKillerAndGCRecord(t *testing.T) {
	k := &evictiontest.Killer{Err: errors.New("nope")}
	g := int64(1)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
	err := k.KillPodForEviction(context.Background(), pod, v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}, &g)
	assert.EqualError(t, err, "nope")
	g = 5
	kills := k.Kills()
	require.Len(t, kills, 1)
	assert.Equal(t, evictiontest.Kill{UID: "u", Name: "p", Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}, GracePeriod: ptr(int64(1))}, kills[0])

	gc := &evictiontest.GC{OnImages: func(context.Context) error { return errors.New("in use") }}
	assert.NoError(t, gc.DeleteAllUnusedContainers(context.Background()))
	assert.EqualError(t, gc.DeleteUnusedImages(context.Background()), "in use")
	assert.Equal(t, []string{"containers", "images"}, gc.Calls())
}

func ptr[T any](v T) *T { return &v }
