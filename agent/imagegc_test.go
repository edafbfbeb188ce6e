package agent_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// imageFsStats is a dedicated image filesystem of 10Gi on which 7Gi are
// used by other things and the rest by the runtime's images: removing an
// image frees its size. Until full is set, the runtime's images take no
// room. Every Get is a fresh measurement, and is counted.
type imageFsStats struct {
	rt   *fake.Runtime
	full atomic.Bool
	gets atomic.Int64
}

func (s *imageFsStats) Get(ctx context.Context) (*stats.Summary, error) {
	s.gets.Add(1)
	imgs, err := s.rt.ListImages(ctx, nil)
	if err != nil {
		return nil, err
	}
	used := uint64(7 * gi)
	for _, img := range imgs {
		if s.full.Load() {
			used += img.Size
		}
	}
	now := time.Now()
	sum := &stats.Summary{}
	sum.Node.ImageFs = &stats.FsStats{Time: now, CapacityBytes: 10 * gi, AvailableBytes: 10*gi - used, UsedBytes: used}
	sum.Node.DedicatedImageFs = true
	return sum, nil
}

func imageIDs(t *testing.T, rt *fake.Runtime) []string {
	t.Helper()
	imgs, err := rt.ListImages(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, img := range imgs {
		out = append(out, img.Id)
	}
	return out
}

// Under image filesystem pressure, eviction removes the unused images
// first, and evicts nobody once that relieves the pressure.
func TestImageFsPressureRemovesUnusedImagesBeforeEvicting(t *testing.T) {
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	// 2Gi unused: imagefs.available is about 10%, under the default hard
	// threshold (15%); without it, about 30%.
	require.NoError(t, rt.AddImage(&runtimeapi.Image{Id: "sha256:unused", RepoTags: []string{"example.com/old:1"}, Size: 2 * gi}))
	st := &imageFsStats{rt: rt}
	api := make(chan syncloop.PodUpdate, 1)
	api <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: []*v1.Pod{apiPod("app", "")}}
	n := startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(t.TempDir(), "root"), Updates: api,
		// Threshold collection off (100%) and no minimum age: only
		// eviction removes images here.
		ImageGC:  imagegc.Policy{HighThresholdPercent: 100, LowThresholdPercent: 80},
		Eviction: agent.EvictionOptions{Stats: st, MonitoringInterval: 100 * time.Millisecond, PressureTransitionPeriod: time.Hour}})
	app := n.waitPod("app", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	st.full.Store(true)
	n.waitNodeCondition(v1.NodeDiskPressure, v1.ConditionTrue)
	eventually(t, "the unused image removed", func() bool { return !slices.Contains(imageIDs(t, rt), "sha256:unused") })
	assert.Len(t, imageIDs(t, rt), 1, "busybox, which app runs, stays")
	// Further passes see no pressure: app is never evicted.
	for gets := st.gets.Load(); st.gets.Load() < gets+5; {
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	app = n.pods()["app"]
	assert.Equal(t, v1.PodRunning, app.Status.Phase)
}

// Without pressure, periodic image collection keeps the image filesystem
// under its high threshold, removing no more than it must.
func TestImageGCFreesDownToTheLowThreshold(t *testing.T) {
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	// 7Gi + 2 x 1Gi + busybox: 90% used; down to 80% is one image.
	for _, id := range []string{"sha256:a", "sha256:b"} {
		require.NoError(t, rt.AddImage(&runtimeapi.Image{Id: id, Size: gi}))
	}
	st := &imageFsStats{rt: rt}
	st.full.Store(true)
	timings := fast
	timings.ImageGC = 50 * time.Millisecond
	startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(t.TempDir(), "root"),
		ImageGC:  imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
		Eviction: agent.EvictionOptions{Disabled: true, Stats: st}, Timings: timings})
	eventually(t, "an image removed", func() bool { return len(imageIDs(t, rt)) == 1 })
	for gets := st.gets.Load(); st.gets.Load() < gets+5; {
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	assert.Equal(t, []string{"sha256:b"}, imageIDs(t, rt), "least recently used first (never used, then by ID); 80% reached")
}
