package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// imageFsStats is a dedicated image filesystem of 10Gi on which 7Gi are
// used by other things and the rest by the runtime's images: removing an
// image frees its size. Until full is set, the runtime's images take no
// room. Measurements are stamped with the node's time, and counted; until
// the node is set, there is none.
type imageFsStats struct {
	mu   sync.Mutex
	n    *agenttest.Node
	full bool
	gets int
}

var errNotYet = errors.New("no node to measure yet")

func (s *imageFsStats) set(n *agenttest.Node, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.full = n, full
}

// count returns how many measurements were taken.
func (s *imageFsStats) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

func (s *imageFsStats) Get(ctx context.Context) (*stats.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		return nil, errNotYet
	}
	s.gets++
	imgs, err := s.n.Runtime().ListImages(ctx, nil)
	if err != nil {
		return nil, err
	}
	used := uint64(7 * gi)
	for _, img := range imgs {
		if s.full {
			used += img.Size
		}
	}
	sum := &stats.Summary{}
	sum.Node.ImageFs = &stats.FsStats{Time: s.n.Now(), CapacityBytes: 10 * gi, AvailableBytes: 10*gi - used, UsedBytes: used}
	sum.Node.DedicatedImageFs = true
	return sum, nil
}

func imageIDs(t *testing.T, n *agenttest.Node) []string {
	t.Helper()
	imgs, err := n.Runtime().ListImages(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, img := range imgs {
		out = append(out, img.Id)
	}
	return out
}

// Under image filesystem pressure, eviction removes the unused images
// first, and evicts nobody once that relieves the pressure; the records of
// the images removed (cri/pullrecords) go with them.
func TestImageFsPressureRemovesUnusedImagesBeforeEvicting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &imageFsStats{}
		root := t.TempDir()
		records, err := pullrecords.OpenStore(filepath.Join(root, pullrecords.DirName))
		require.NoError(t, err)
		require.NoError(t, records.WriteRecord(&pullrecords.Record{ImageRef: "sha256:unused", LastUpdated: time.Now().Add(-time.Hour),
			Credentials: map[string]pullrecords.Credentials{"example.com/old": {NodePodsAccessible: true}}}))
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			RootDir: root,
			// Threshold collection off (100%) and no minimum age: only
			// eviction removes images here.
			ImageGC:  imagegc.Policy{HighThresholdPercent: 100, LowThresholdPercent: 80},
			Eviction: agent.EvictionOptions{Stats: st},
		}})
		start := n.Now()
		// 2Gi unused: imagefs.available is about 10%, under the default
		// hard threshold (15%); without it, about 30%.
		require.NoError(t, n.Runtime().AddImage(&runtimeapi.Image{Id: "sha256:unused", RepoTags: []string{"example.com/old:1"}, Size: 2 * gi}))
		st.set(n, false)
		n.AddPod(apiPod("app", ""))
		require.True(t, n.StepUntil(time.Minute, podIs(n, "app", isRunning)), "app Running")
		require.Len(t, imageIDs(t, n), 2)

		st.set(n, true)
		require.True(t, n.StepUntil(time.Minute, func() bool { return len(imageIDs(t, n)) == 1 }), "the unused image removed")
		assert.Equal(t, 10*time.Second, n.Now().Sub(start), "at the next pass of eviction (every 10s from the start)")
		assert.NotContains(t, imageIDs(t, n), "sha256:unused")
		assert.Len(t, imageIDs(t, n), 1, "busybox, which app runs, stays")
		// The pressure was met in that pass: the node shows it, from the
		// node status built at the same time, for the transition period.
		assert.Equal(t, v1.ConditionTrue, nodeCondition(n, v1.NodeDiskPressure), "DiskPressure")

		// Further passes see no pressure: app is never evicted.
		gets := st.count()
		n.Step(time.Minute)
		assert.GreaterOrEqual(t, st.count(), gets+5, "measured again")
		app := mustPod(t, n, "app")
		assert.Equal(t, v1.PodRunning, app.Status.Phase)
		assert.Equal(t, 1, runningContainers(n, app.UID))
		assert.Equal(t, v1.ConditionTrue, nodeCondition(n, v1.NodeDiskPressure), "within the transition period (5m)")
		assert.Equal(t, []string{"10s Warning EvictionThresholdMet: Attempting to reclaim ephemeral-storage"}, eventsAbout(n, start, "Node node1"))
		assert.Empty(t, eventsAbout(n, start.Add(time.Second), "Pod default/app"), "not evicted")

		_, ok, err := records.Record("sha256:unused")
		require.NoError(t, err)
		assert.False(t, ok, "the removed image's record is forgotten")
		_, ok, err = records.Record(imageIDs(t, n)[0])
		require.NoError(t, err)
		assert.True(t, ok, "busybox's, which the node pulled for app, stays")
	})
}

// Without pressure, periodic image collection (every 5m, upstream's
// period) keeps the image filesystem under its high threshold, removing no
// more than it must.
func TestImageGCFreesDownToTheLowThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &imageFsStats{}
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			ImageGC:  imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			Eviction: agent.EvictionOptions{Disabled: true, Stats: st},
		}})
		// 7Gi + 2 x 1Gi: 90% used; down to 80% is one image.
		for _, id := range []string{"sha256:a", "sha256:b"} {
			require.NoError(t, n.Runtime().AddImage(&runtimeapi.Image{Id: id, Size: gi}))
		}
		st.set(n, true)
		start := n.Now()
		require.True(t, n.StepUntil(10*time.Minute, func() bool { return len(imageIDs(t, n)) == 1 }), "an image removed")
		assert.Equal(t, 5*time.Minute, n.Now().Sub(start), "at the first collection that measures it")
		n.Step(25 * time.Minute)
		assert.Equal(t, 6, st.count(), "measured at each collection")
		assert.Equal(t, []string{"sha256:b"}, imageIDs(t, n), "least recently used first (never used, then by ID); 80% reached")
	})
}
