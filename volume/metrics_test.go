package volume_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

// observation is one ObserveOperation call, its duration left out (the
// fake clock does not move during an operation).
type observation struct {
	op, plugin string
	failed     bool
}

// opRecorder is a volume.Metrics that records what it is told.
type opRecorder struct {
	mu  sync.Mutex
	obs []observation
}

func (r *opRecorder) ObserveOperation(op, plugin string, d time.Duration, err error) {
	if d < 0 {
		panic("negative duration")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, observation{op, plugin, err != nil})
}

// take returns what was observed since the last take.
func (r *opRecorder) take() []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.obs
	r.obs = nil
	return out
}

const csiName = "kubernetes.io/csi:csi.example.com"

// TestOperationMetricsEmptyDir: an emptyDir's first set up is verified as
// attached and mounted, its tear down unmounted, under upstream's plugin
// name; the counts follow the desired and actual states.
func TestOperationMetricsEmptyDir(t *testing.T) {
	rec := &opRecorder{}
	h := newHarness(t, func(o *volume.Options) { o.Metrics = rec }).run()
	pod := newPod("p", v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	assert.Empty(t, h.m.VolumeCounts())

	require.NoError(t, h.mount(pod))
	assert.Equal(t, []observation{
		{op: volume.OpVerifyAttached, plugin: volume.EmptyDirPluginName},
		{op: volume.OpMount, plugin: volume.EmptyDirPluginName},
	}, rec.take())
	assert.Equal(t, []volume.VolumeCount{{Plugin: volume.EmptyDirPluginName, Desired: 1, Actual: 1}}, h.m.VolumeCounts())

	require.NoError(t, h.mount(pod), "a pod already mounted")
	assert.Empty(t, rec.take(), "nothing to do, nothing observed")

	require.NoError(t, h.unmount(pod))
	assert.Equal(t, []observation{{op: volume.OpUnmount, plugin: volume.EmptyDirPluginName}}, rec.take())
	assert.Empty(t, h.m.VolumeCounts())
}

// TestOperationMetricsRefresh: a configMap volume refreshed from its
// source is mounted again, as upstream's remount, without a new attachment
// check.
func TestOperationMetricsRefresh(t *testing.T) {
	rec := &opRecorder{}
	h := newHarness(t, func(o *volume.Options) { o.Metrics = rec }).run()
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v"}})
	pod := newPod("p", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	require.NoError(t, h.mount(pod))
	assert.Len(t, rec.take(), 2)
	require.True(t, h.m.Refresh(pod))
	waitFor(t, "the refresh", func() bool { return len(rec.obs1()) == 1 })
	assert.Equal(t, []observation{{op: volume.OpMount, plugin: volume.ConfigMapPluginName}}, rec.take())
	require.NoError(t, h.unmount(pod))
}

// obs1 returns what was observed so far without taking it.
func (r *opRecorder) obs1() []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observation(nil), r.obs...)
}

// TestOperationMetricsCSIPersistentVolume: two pods share a staged CSI
// persistent volume. Its attachment is verified once for the node; each
// pod mounts and unmounts it; the last unmount also unmounts the device
// (NodeUnstageVolume). The plugin name carries the driver.
func TestOperationMetricsCSIPersistentVolume(t *testing.T) {
	rec := &opRecorder{}
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
	lookup := driverLookup(d, startDriver(t, d))
	h := newHarness(t, func(o *volume.Options) {
		o.CSIDrivers = lookup
		o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources)
		o.Metrics = rec
	}).run()
	csiPV(h.src, v1.ReadWriteOnce)
	h.src.SetCSIDriver(csiDriver(false, false))
	p1, p2 := claimPod(false), claimPod(false)
	p2.Name, p2.UID = "q", "uid-q"

	require.NoError(t, h.mount(p1))
	require.NoError(t, h.mount(p2))
	assert.Equal(t, []observation{
		{op: volume.OpVerifyAttached, plugin: csiName},
		{op: volume.OpMount, plugin: csiName},
		{op: volume.OpMount, plugin: csiName},
	}, rec.take())
	assert.Equal(t, []volume.VolumeCount{{Plugin: csiName, Desired: 2, Actual: 2}}, h.m.VolumeCounts())

	require.NoError(t, h.unmount(p1))
	assert.Equal(t, []observation{{op: volume.OpUnmount, plugin: csiName}}, rec.take())
	require.NoError(t, h.unmount(p2))
	assert.ElementsMatch(t, []observation{{op: volume.OpUnmount, plugin: csiName}, {op: volume.OpUnmountDevice, plugin: csiName}}, rec.take())
	assert.Empty(t, h.m.VolumeCounts())
}

// TestOperationMetricsFailures: a failed publish is a failed mount (the
// volume then counts as desired, not actual), a failed unstage a failed
// device unmount and a failed unmount; a volume that needs attaching is
// not observed at all.
func TestOperationMetricsFailures(t *testing.T) {
	t.Run("publish and unstage fail", func(t *testing.T) {
		rec := &opRecorder{}
		d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
		lookup := driverLookup(d, startDriver(t, d))
		h := newHarness(t, func(o *volume.Options) {
			o.CSIDrivers = lookup
			o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources)
			o.Metrics = rec
		}).run()
		csiPV(h.src, v1.ReadWriteOnce)
		h.src.SetCSIDriver(csiDriver(false, false))
		pod := claimPod(false)

		d.Fail(fakecsi.NodePublishVolume, status.Error(codes.Internal, "disk on fire"))
		require.Error(t, h.failMount(pod))
		// The manager may retry the publish while the fault holds: every
		// retry is one more failed mount, never another attachment check.
		failedMount := observation{op: volume.OpMount, plugin: csiName, failed: true}
		waitFor(t, "the failed mount's operations to end", func() bool { return volume.Busy(h.m) == 0 })
		got := rec.take()
		require.GreaterOrEqual(t, len(got), 2, "%v", got)
		assert.Equal(t, []observation{{op: volume.OpVerifyAttached, plugin: csiName}, failedMount}, got[:2])
		for _, o := range got[2:] {
			assert.Equal(t, failedMount, o, "only failed retries")
		}
		assert.Equal(t, []volume.VolumeCount{{Plugin: csiName, Desired: 1}}, h.m.VolumeCounts())

		d.Fail(fakecsi.NodePublishVolume, nil)
		require.NoError(t, h.mountAfterBackoff(pod, 10*time.Second))
		var after []observation
		for _, o := range rec.take() {
			if o != failedMount { // a retry that ran before the fault was lifted
				after = append(after, o)
			}
		}
		assert.Equal(t, []observation{{op: volume.OpMount, plugin: csiName}}, after, "one mount, no second check")

		d.Fail(fakecsi.NodeUnstageVolume, status.Error(codes.Internal, "busy"))
		h.m.RemovePod(pod.UID)
		waitFor(t, "the failed tear down", func() bool { return len(rec.obs1()) == 2 })
		assert.ElementsMatch(t, []observation{
			{op: volume.OpUnmountDevice, plugin: csiName, failed: true},
			{op: volume.OpUnmount, plugin: csiName, failed: true},
		}, rec.take())
		d.Fail(fakecsi.NodeUnstageVolume, nil)
		waitFor(t, "the operations in flight to end", func() bool { return volume.Busy(h.m) == 0 })
		h.clk.Step(10 * time.Second)
		require.NoError(t, h.unmount(pod))
		assert.ElementsMatch(t, []observation{
			{op: volume.OpUnmountDevice, plugin: csiName},
			{op: volume.OpUnmount, plugin: csiName},
		}, rec.take())
	})
	t.Run("needs attaching", func(t *testing.T) {
		rec := &opRecorder{}
		d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
		lookup := driverLookup(d, startDriver(t, d))
		h := newHarness(t, func(o *volume.Options) {
			o.CSIDrivers = lookup
			o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources)
			o.Metrics = rec
		}).run()
		csiPV(h.src, v1.ReadWriteOnce)
		require.ErrorIs(t, h.failMount(claimPod(false)), volume.ErrNotAttached)
		assert.Empty(t, rec.take())
	})
}

// TestOperationMetricsInlineCSIAfterRestart: a restarted manager names an
// inline CSI volume it found on disk, whose pod is gone, by its driver
// (from vol_data.json) when it reports its tear down.
func TestOperationMetricsInlineCSIAfterRestart(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com"})
	lookup := driverLookup(d, startDriver(t, d))
	h := newHarness(t, func(o *volume.Options) { o.CSIDrivers = lookup }).run()
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"key": []byte("v")}})
	pod := csiPod("csi.example.com")
	require.NoError(t, h.mount(pod))
	h.stop()

	rec := &opRecorder{}
	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir, o.CSIDrivers, o.Metrics = h.root, lookup, rec
	}).run()
	waitFor(t, "the volume found on disk to be torn down", func() bool { return len(rec.obs1()) == 1 })
	assert.Equal(t, []observation{{op: volume.OpUnmount, plugin: csiName}}, rec.take())
	assert.Empty(t, h2.m.VolumeCounts())
}
