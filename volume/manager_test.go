package volume_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/volume"
)

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts volume.Options
		want string
	}{
		{name: "no root", opts: volume.Options{}, want: "RootDir is required"},
		{name: "negative period", opts: volume.Options{RootDir: "/x", ReconcilePeriod: -1}, want: "ReconcilePeriod is negative"},
		{name: "nil plugin", opts: volume.Options{RootDir: "/x", Plugins: []volume.Plugin{nil}}, want: "Plugins[0] is nil"},
		{name: "duplicate plugin", opts: volume.Options{RootDir: "/x", Plugins: []volume.Plugin{&fakePlugin{name: "a/b"}, &fakePlugin{name: "a/b"}}}, want: `two plugins are named "a/b"`},
		{name: "bad plugin name", opts: volume.Options{RootDir: "/x", Plugins: []volume.Plugin{&fakePlugin{name: ".."}}}, want: `plugin name ".."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := volume.New(tc.opts)
			require.ErrorIs(t, err, volume.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	m, err := volume.New(volume.Options{RootDir: t.TempDir()})
	require.NoError(t, err)
	require.NotNil(t, m)
}

func TestRunTwice(t *testing.T) {
	h := newHarness(t, nil).run()
	waitFor(t, "Run to start its ticker", func() bool { return h.clk.Waiters() >= 1 })
	assert.ErrorIs(t, h.m.Run(context.Background()), volume.ErrAlreadyRunning)
}

func TestWaitForMountTimeoutMessage(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p",
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	)
	err := h.failMount(pod)
	require.Error(t, err)
	assert.Equal(t, `unmounted volumes=[cfg], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition; volume "cfg": configmap "app" not found`, err.Error())
	assert.ErrorIs(t, err, volume.ErrTimeout)
	assert.True(t, apierrors.IsNotFound(errors.Unwrap(err)) || errors.Is(err, &apierrors.StatusError{}) || containsNotFound(err))
	events := h.rec.Strings()
	assert.Contains(t, events, `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`)
	assert.Contains(t, events, "Warning FailedMount Unable to attach or mount volumes: "+err.Error())

	// Once the configMap exists, the retry (after its backoff) succeeds.
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v"}})
	require.NoError(t, h.mountAfterBackoff(pod, 5*time.Second))
}

// containsNotFound walks the error tree for a NotFound API error.
func containsNotFound(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se) && apierrors.IsNotFound(err)
}

func TestWaitForMountFailsAtOnceForAVolumeItCannotProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		is   error
		want string
	}{
		{
			name: "no plugin",
			pod:  newPod("p", v1.Volume{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/x"}}}),
			is:   volume.ErrUnsupported,
			want: `unmounted volumes=[nfs], unattached volumes=[], failed to process volumes=[nfs]: volume "nfs": unsupported: no volume plugin supports volume "nfs"`,
		},
		{
			name: "bad name",
			pod:  newPod("p", v1.Volume{Name: "../etc", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}),
			is:   volume.ErrInvalidVolume,
			want: `failed to process volumes=[../etc]: volume "../etc": invalid volume: volume name "../etc"`,
		},
		{
			name: "duplicate name",
			pod: newPod("p", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}),
			is:   volume.ErrInvalidVolume,
			want: `volume name "a" is used more than once`,
		},
		{
			name: "bad uid",
			pod: func() *v1.Pod {
				p := newPod("p", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
				p.UID = "../../x"
				return p
			}(),
			is:   volume.ErrInvalidVolume,
			want: `pod UID "../../x" is not usable as a directory name`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil).run()
			err := h.mount(tc.pod)
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
			assert.Len(t, h.rec.Events(), 1)
			entries, _ := os.ReadDir(h.root)
			assert.Empty(t, entries, "nothing created")
		})
	}
}

func TestWaitForMountEndsWhenThePodIsRemoved(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}})
	res := make(chan error, 1)
	go func() { res <- h.mount(pod) }()
	waitFor(t, "the FailedMount event", func() bool { return len(h.rec.Events()) > 0 })
	h.m.RemovePod(pod.UID)
	assert.ErrorIs(t, <-res, volume.ErrPodRemoved)
}

func TestWaitForMountWithoutVolumes(t *testing.T) {
	h := newHarness(t, nil) // not even running
	require.NoError(t, h.m.WaitForMount(context.Background(), newPod("p")))
	require.NoError(t, h.m.WaitForMount(context.Background(), nil))
	require.NoError(t, h.m.WaitForUnmount(context.Background(), nil))
}

func TestWaitForMountContextEnds(t *testing.T) {
	h := newHarness(t, nil) // not running: nothing will be set up
	pod := newPod("p", v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.m.WaitForMount(ctx, pod)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "unmounted volumes=[cache], unattached volumes=[], failed to process volumes=[]: context canceled", err.Error())
	assert.Empty(t, h.rec.Events(), "the caller's own cancellation is not an event")
}

func TestConfigMapRefresh(t *testing.T) {
	h := newHarness(t, nil).run()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v1", "old": "x"}}
	h.src.SetConfigMap(cm)
	pod := newPod("p", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}})
	require.NoError(t, h.mount(pod))
	dir := h.volDir(pod, volume.ConfigMapPluginName, "cfg")
	assert.Equal(t, map[string]string{"k": "v1", "old": "x"}, listFiles(t, dir))

	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: cm.ObjectMeta, Data: map[string]string{"k": "v2", "new": "y"}})
	h.clk.Step(30 * time.Second)
	require.NoError(t, h.mount(pod)) // a sync: nothing changes before the period
	assert.Equal(t, "v1", readFile(t, filepath.Join(dir, "k")))

	h.clk.Step(30 * time.Second) // the refresh period has passed
	waitFor(t, "the new content", func() bool { b, _ := os.ReadFile(filepath.Join(dir, "k")); return string(b) == "v2" })
	waitFor(t, "the old key to go", func() bool { return !exists(filepath.Join(dir, "old")) })
	assert.Equal(t, map[string]string{"k": "v2", "new": "y"}, listFiles(t, dir))

	// Refresh writes at once.
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: cm.ObjectMeta, Data: map[string]string{"k": "v3"}})
	assert.True(t, h.m.Refresh(pod))
	waitFor(t, "the refreshed content", func() bool { b, _ := os.ReadFile(filepath.Join(dir, "k")); return string(b) == "v3" })

	// A configMap deleted under a running pod leaves the last content.
	h.src.DeleteConfigMap("ns", "app")
	n := len(h.rec.Events())
	assert.True(t, h.m.Refresh(pod))
	waitFor(t, "the failed refresh", func() bool { return len(h.rec.Events()) > n })
	assert.Equal(t, "v3", readFile(t, filepath.Join(dir, "k")))
	mts, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}})
	require.NoError(t, err, "still mounted")
	assert.Len(t, mts, 1)
	assert.False(t, h.m.Refresh(newPod("unknown")))
}

func TestTokenIsCachedUntil80PercentOfItsLife(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p", v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr(int64(600))}},
	}}}})
	require.NoError(t, h.mount(pod))
	dir := h.volDir(pod, volume.ProjectedPluginName, "tok")
	assert.Equal(t, "token-ns-default-1", readFile(t, filepath.Join(dir, "token")))
	assert.Equal(t, []string{"vault"}, h.tokens.Calls()[0].Request.Spec.Audiences)

	h.clk.Step(time.Minute) // refresh period: volume rewritten from the cache
	h.m.Refresh(pod)
	h.clk.Step(time.Minute)
	h.m.Refresh(pod)
	waitFor(t, "the refreshes to end", func() bool { return volume.Busy(h.m) == 0 })
	assert.Len(t, h.tokens.Calls(), 1, "the token is reused")

	h.clk.Step(3 * time.Minute) // 5 minutes: past 80% of 10 minutes? no (8m)
	h.m.Refresh(pod)
	h.clk.Step(3 * time.Minute) // 8 minutes
	h.m.Refresh(pod)
	waitFor(t, "a new token", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "token"))
		return string(b) == "token-ns-default-2"
	})
}

func TestNoTokenSource(t *testing.T) {
	h := newHarness(t, func(o *volume.Options) { o.Sources.Tokens = nil }).run()
	pod := newPod("p", v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
	}}}})
	err := h.failMount(pod)
	assert.ErrorIs(t, err, volume.ErrNoSource)
	assert.ErrorContains(t, err, "serviceAccountToken: no source configured (Options.Sources.Tokens)")
}

// beforeRestart runs a first Manager with two pods, kept (an emptyDir
// holding data "precious" and a secret on a tmpfs) and gone (an emptyDir),
// and returns it with the pods and kept's emptyDir, its Manager still
// running.
func beforeRestart(t *testing.T) (*harness, *v1.Pod, *v1.Pod, string) {
	t.Helper()
	h1 := newHarness(t, nil).run()
	h1.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}})
	kept := newPod("kept",
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}})
	gone := newPod("gone", v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	require.NoError(t, h1.mount(kept))
	require.NoError(t, h1.mount(gone))
	keptCache := h1.volDir(kept, volume.EmptyDirPluginName, "cache")
	require.NoError(t, os.WriteFile(filepath.Join(keptCache, "data"), []byte("precious"), 0o644))
	return h1, kept, gone, keptCache
}

// TestRestartRebuildsFromDisk: a second Manager on the same RootDir finds
// the first one's volumes, does not tear them down before the sources are
// ready, keeps an emptyDir's data when its pod comes back, and tears down
// the volumes of a pod that did not come back.
func TestRestartRebuildsFromDisk(t *testing.T) {
	h1, kept, gone, keptCache := beforeRestart(t)
	goneCache := h1.volDir(gone, volume.EmptyDirPluginName, "cache")
	require.NoError(t, os.WriteFile(filepath.Join(goneCache, "data"), []byte("stale"), 0o644))
	h1.stop()

	var ready atomic.Bool
	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir = h1.root
		o.Mounter = h1.mnt // the tmpfs of the secret is still mounted
		o.Sources = volume.Sources{Secrets: h1.src}
		o.SourcesReady = ready.Load
	})
	h2.root = h1.root
	h2.run()
	h2.clk.Step(time.Second) // reconcile a few times: nothing may be torn down
	h2.clk.Step(time.Second)
	assert.True(t, exists(goneCache))

	require.NoError(t, h2.mount(kept))
	assert.Equal(t, "precious", readFile(t, filepath.Join(keptCache, "data")), "emptyDir data survives a restart")
	mounts := 0
	for _, c := range h1.mnt.Calls() {
		if c.Op == "mount" {
			mounts++
		}
	}
	assert.Equal(t, 1, mounts, "the secret's tmpfs is not mounted twice")

	ready.Store(true)
	h2.clk.Step(time.Second)
	waitFor(t, "the gone pod's volume to be torn down", func() bool { return !exists(volume.PodDir(h1.root, gone.UID)) })
	assert.True(t, exists(filepath.Join(keptCache, "data")))
}

// A restarted Manager whose sources are ready at once tears down the
// volumes it found of pods the agent no longer runs, and leaves those of a
// pod it still runs (Options.ActivePod) for that pod's WaitForMount, even
// while the pod's worker has not asked yet: its emptyDir keeps its data and
// its secret's tmpfs is not mounted again.
func TestRestartKeepsTheVolumesOfActivePods(t *testing.T) {
	h1, kept, gone, keptCache := beforeRestart(t)
	h1.stop()

	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir = h1.root
		o.Mounter = h1.mnt
		o.Sources = volume.Sources{Secrets: h1.src}
		o.ActivePod = func(uid types.UID) bool { return uid == kept.UID }
	})
	h2.root = h1.root
	h2.run()
	waitFor(t, "the gone pod's volume to be torn down", func() bool { return !exists(volume.PodDir(h1.root, gone.UID)) })
	h2.clk.Step(time.Second) // reconcile again: the kept pod's volumes stay
	h2.clk.Step(time.Second)
	assert.Equal(t, "precious", readFile(t, filepath.Join(keptCache, "data")), "not torn down before its pod asks")

	require.NoError(t, h2.mount(kept))
	assert.Equal(t, "precious", readFile(t, filepath.Join(keptCache, "data")), "adopted with its data")
	mounts, unmounts := 0, 0
	for _, c := range h1.mnt.Calls() {
		switch c.Op {
		case "mount":
			mounts++
		case "unmount":
			unmounts++
		}
	}
	assert.Equal(t, 1, mounts, "the secret's tmpfs is not mounted twice")
	assert.Zero(t, unmounts, "nor unmounted")
}

func TestWaitForUnmountRemovesEverything(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v"}})
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}})
	pod := newPod("p",
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
		v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}},
	)
	require.NoError(t, h.mount(pod))
	// Another part of the agent keeps a file in the pod directory.
	other := filepath.Join(volume.PodDir(h.root, pod.UID), "containers", "app", "0")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o755))
	require.NoError(t, os.WriteFile(other, nil, 0o644))

	require.NoError(t, h.unmount(pod))
	waitFor(t, "the volumes directory to go", func() bool { return !exists(volume.PodVolumesDir(h.root, pod.UID)) })
	assert.True(t, exists(other), "files of other blocks are left alone")
	assert.Empty(t, h.mnt.Mounted())
	_, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "cache", MountPath: "/c"}}})
	assert.ErrorIs(t, err, volume.ErrNotMounted)
}

func TestTearDownFailureIsRetried(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p", v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})
	require.NoError(t, h.mount(pod))
	h.mnt.SetUnmountErr(errors.New("device busy"))
	h.m.RemovePod(pod.UID)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.m.WaitForUnmount(ctx, pod)
	assert.ErrorContains(t, err, "mounted volumes=[mem]")
	dir := h.volDir(pod, volume.EmptyDirPluginName, "mem")
	waitFor(t, "an unmount attempt", func() bool { return len(h.mnt.Calls()) >= 2 })
	waitFor(t, "the failure to be recorded", func() bool {
		return strings.Contains(fmt.Sprint(h.m.WaitForUnmount(ctx, pod)), "device busy")
	})
	err = h.m.WaitForUnmount(ctx, pod)
	assert.Equal(t, `mounted volumes=[mem]: context canceled; volume "mem": device busy`, err.Error(), "the tear down error is told")
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, exists(dir), "nothing removed while still mounted")

	h.mnt.SetUnmountErr(nil)
	res := make(chan error, 1)
	go func() { res <- h.unmount(pod) }()
	h.clk.Step(time.Second) // past the backoff
	require.NoError(t, <-res)
	assert.False(t, exists(dir))
}

// fakePlugin is a Plugin for volumes with a "fake" annotation-free
// flexVolume source of driver "fake/<name>".
type fakePlugin struct {
	name     string
	setUps   atomic.Int32
	tearDown atomic.Int32
}

func (p *fakePlugin) Name() string { return p.name }
func (p *fakePlugin) CanSupport(spec *v1.Volume) bool {
	return spec.FlexVolume != nil && spec.FlexVolume.Driver == p.name
}
func (p *fakePlugin) SetUp(_ context.Context, v *volume.Volume) (volume.Mounted, error) {
	p.setUps.Add(1)
	return volume.Mounted{HostPath: v.Dir}, os.MkdirAll(v.Dir, 0o755)
}
func (p *fakePlugin) TearDown(_ context.Context, v *volume.Volume) error {
	p.tearDown.Add(1)
	return os.RemoveAll(v.Dir)
}

func TestExtraPlugin(t *testing.T) {
	fp := &fakePlugin{name: "example.com/flex"}
	h := newHarness(t, func(o *volume.Options) { o.Plugins = []volume.Plugin{fp} }).run()
	pod := newPod("p", v1.Volume{Name: "x", VolumeSource: v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/flex"}}})
	require.NoError(t, h.mount(pod))
	assert.True(t, exists(filepath.Join(volume.PodVolumesDir(h.root, pod.UID), "example.com~flex", "x")))
	require.NoError(t, h.unmount(pod))
	assert.Equal(t, int32(1), fp.setUps.Load())
	assert.Equal(t, int32(1), fp.tearDown.Load())
}

func TestPluginReplacesBuiltin(t *testing.T) {
	fp := &fakePlugin{name: volume.EmptyDirPluginName}
	fpSupports := func(spec *v1.Volume) bool { return spec.EmptyDir != nil }
	p := &replacingPlugin{fakePlugin: fp, supports: fpSupports}
	h := newHarness(t, func(o *volume.Options) { o.Plugins = []volume.Plugin{p} }).run()
	pod := newPod("p", v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})
	require.NoError(t, h.mount(pod))
	assert.Equal(t, int32(1), fp.setUps.Load())
	assert.Empty(t, h.mnt.Calls(), "the built-in emptyDir was not used")
}

type replacingPlugin struct {
	*fakePlugin
	supports func(*v1.Volume) bool
}

func (p *replacingPlugin) CanSupport(spec *v1.Volume) bool { return p.supports(spec) }
