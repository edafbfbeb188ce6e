package agenttest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// splitDisk measures a node whose runtime reports its filesystems through
// the fake's ImageFsInfo: nodefs roomy, imagefs and containerfs of the given
// capacities with the runtime's usage, and the pods' writable layers from
// the runtime's container stats.
type splitDisk struct {
	mu                  sync.Mutex
	rt                  *fake.Runtime // nil: an idle node
	imageCap, layersCap uint64
}

func (d *splitDisk) set(rt *fake.Runtime, imageCap, layersCap uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rt, d.imageCap, d.layersCap = rt, imageCap, layersCap
}

func (d *splitDisk) Get(ctx context.Context) (*stats.Summary, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return &stats.Summary{}, nil
	}
	info, err := d.rt.ImageFsInfo(ctx)
	if err != nil {
		return nil, err
	}
	fs := func(capacity, used uint64) *stats.FsStats {
		return &stats.FsStats{CapacityBytes: capacity, UsedBytes: used, AvailableBytes: capacity - min(capacity, used), Inodes: 1 << 20, InodesFree: 1 << 20}
	}
	s := &stats.Summary{Node: stats.NodeStats{
		Fs:               fs(100<<30, 0),
		ImageFs:          fs(d.imageCap, info.ImageFilesystems[0].GetUsedBytes().GetValue()),
		DedicatedImageFs: true,
	}}
	if cri.SplitContainerFs(info) {
		s.Node.ContainerFs, s.Node.SplitContainerFs = fs(d.layersCap, info.ContainerFilesystems[0].GetUsedBytes().GetValue()), true
	}
	cs, err := d.rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]int{}
	for _, c := range cs {
		uid := types.UID(c.GetAttributes().GetLabels()[cri.PodUIDLabel])
		i, ok := byUID[uid]
		if !ok {
			i, byUID[uid] = len(s.Pods), len(s.Pods)
			s.Pods = append(s.Pods, stats.PodStats{UID: uid})
		}
		s.Pods[i].Containers = append(s.Pods[i].Containers, stats.ContainerStats{
			Name:   c.GetAttributes().GetMetadata().GetName(),
			Rootfs: &stats.FsStats{UsedBytes: c.GetWritableLayer().GetUsedBytes().GetValue()},
		})
	}
	return s, nil
}

// setLayer sets the writable layer of the pod's container on the container
// filesystem.
func setLayer(t *testing.T, n *agenttest.Node, podName, container string, bytes uint64) string {
	t.Helper()
	cs, err := n.Runtime().ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		cri.PodNameLabel: podName, cri.ContainerNameLabel: container}})
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.NoError(t, n.Runtime().SetContainerStats(cs[0].Id, &runtimeapi.ContainerStats{WritableLayer: &runtimeapi.FilesystemUsage{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: layersMount}, UsedBytes: &runtimeapi.UInt64Value{Value: bytes}}}))
	return cs[0].Id
}

const (
	imagesMount = "/var/lib/containers/images"
	layersMount = "/var/lib/containers/storage"
	unusedImage = "registry.example/unused:1"
)

func diskPressure(n *agenttest.Node) bool {
	st, _ := n.Agent().NodeStatus()
	for _, c := range st.Conditions {
		if c.Type == v1.NodeDiskPressure {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// TestSeparateDiskGC: the fake runtime keeps its images and the
// containers' writable layers on two filesystems (KubeletSeparateDiskGC).
// The summary shows both; pressure on the container filesystem sets
// DiskPressure and deletes dead containers first, then evicts the pod whose
// writable layer is largest; pressure on the image filesystem deletes
// unused images only.
func TestSeparateDiskGC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &splitDisk{}
		var signals []eviction.Signal
		recorder := evictionMetrics(func(sig string) { signals = append(signals, eviction.Signal(sig)) })
		n := agenttest.NewNode(t, agenttest.Options{
			Images: []string{"busybox", unusedImage},
			Rules:  []fake.Rule{{Name: "once", Behavior: fake.Behavior{Outcome: fake.Exit}}},
			Agent:  agent.Options{Eviction: agent.EvictionOptions{Stats: d}, Metrics: recorder},
		})
		d.set(n.Runtime(), 100<<30, 100<<30)
		n.Runtime().SetFilesystems(fake.Filesystems{Images: imagesMount, Containers: layersMount})
		job := pod("job", v1.Container{Name: "once", Image: "busybox"})
		job.Spec.RestartPolicy = v1.RestartPolicyNever
		n.AddPod(job)
		n.AddPod(pod("quiet", v1.Container{Name: "app", Image: "busybox"}))
		n.AddPod(pod("layers", v1.Container{Name: "app", Image: "busybox"}))
		n.Step(5 * time.Second)
		require.Equal(t, v1.PodSucceeded, n.Pod("default", "job").Status.Phase)

		// The summary: both filesystems, each with its own usage.
		dead := setLayer(t, n, "job", "once", 80<<30)
		setLayer(t, n, "quiet", "app", 1<<30)
		setLayer(t, n, "layers", "app", 14<<30)
		sum, err := n.Agent().API().Summary(context.Background(), false)
		require.NoError(t, err)
		require.NotNil(t, sum.Node.Runtime)
		assert.Equal(t, uint64(2<<20), *sum.Node.Runtime.ImageFs.UsedBytes, "the two images")
		assert.Equal(t, uint64(95<<30), *sum.Node.Runtime.ContainerFs.UsedBytes, "the writable layers, the dead container's too")
		assert.False(t, diskPressure(n))

		// containerfs below nodefs's 10% (5Gi of 100Gi free): DiskPressure;
		// the dead container goes, which is enough.
		n.Step(20 * time.Second)
		assert.True(t, diskPressure(n))
		var removed []string
		for _, c := range n.Runtime().CallsOf(fake.RemoveContainer) {
			removed = append(removed, c.Request.(*runtimeapi.RemoveContainerRequest).ContainerId)
		}
		assert.Contains(t, removed, dead)
		assert.Empty(t, n.Runtime().CallsOf(fake.RemoveImage), "containerfs pressure leaves the images")
		assert.Equal(t, v1.PodRunning, n.Pod("default", "layers").Status.Phase, "nobody evicted")
		assert.Empty(t, signals)

		// The layers grow back: nothing dead to delete, one pod evicted, the
		// one with the largest writable layer, for containerfs.available.
		setLayer(t, n, "layers", "app", 92<<30)
		n.Step(20 * time.Second)
		assert.Equal(t, []eviction.Signal{eviction.SignalContainerFsAvailable}, signals)
		evicted := n.Pod("default", "layers")
		assert.Equal(t, v1.PodFailed, evicted.Status.Phase)
		assert.Equal(t, eviction.Reason, evicted.Status.Reason)
		assert.Contains(t, evicted.Status.Message, "The node was low on resource: ephemeral-storage.")
		assert.Equal(t, v1.PodRunning, n.Pod("default", "quiet").Status.Phase)

		// imagefs below 15%: unused images go, and that is enough. (The
		// image collector first sees the images at its 5-minute pass and
		// deletes none younger than 2 minutes.)
		n.Step(7 * time.Minute)
		containersBefore := len(n.Runtime().CallsOf(fake.RemoveContainer))
		d.set(n.Runtime(), 2<<20+200<<10, 100<<30)
		n.Step(20 * time.Second)
		var images []string
		for _, c := range n.Runtime().CallsOf(fake.RemoveImage) {
			images = append(images, c.Request.(*runtimeapi.RemoveImageRequest).GetImage().GetImage())
		}
		require.Len(t, images, 1)
		assert.True(t, strings.HasPrefix(images[0], "sha256:"), "the unused image, by ID")
		assert.Len(t, n.Runtime().CallsOf(fake.RemoveContainer), containersBefore, "imagefs pressure leaves the containers")
		present, err := n.Runtime().ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: unusedImage}, false)
		require.NoError(t, err)
		assert.Nil(t, present.GetImage(), "the unused image is gone")
		assert.Len(t, signals, 1, "nobody evicted for imagefs")
		assert.Equal(t, v1.PodRunning, n.Pod("default", "quiet").Status.Phase)
	})
}

// evictionMetrics hears of evictions through agent.EvictionMetrics, and
// of nothing else.
type evictionMetrics func(signal string)

func (f evictionMetrics) Evicted(signal string)                { f(signal) }
func (evictionMetrics) RelistDuration(time.Duration)           {}
func (evictionMetrics) RelistInterval(time.Duration)           {}
func (evictionMetrics) LastSeen(time.Time)                     {}
func (evictionMetrics) EventsCoalesced(int)                    {}
func (evictionMetrics) StreamState(pleg.StreamState)           {}
func (evictionMetrics) ObserveWork(podworkers.WorkObservation) {}
func (evictionMetrics) PodStartDuration(time.Duration)         {}
func (evictionMetrics) Event(string, string)                   {}

var _ agent.EvictionMetrics = evictionMetrics(nil)
