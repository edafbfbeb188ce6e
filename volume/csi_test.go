package volume_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// startDriver serves d on a real unix socket until the test ends and
// returns the socket path.
func startDriver(t *testing.T, d *fakecsi.Driver) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: socket paths are limited to 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return sock
}

func driverLookup(d *fakecsi.Driver, sock string) volume.CSIDriversFunc {
	return func(name string) (string, bool) {
		if name == d.Name() {
			return "unix://" + sock, true
		}
		return "", false
	}
}

func csiHarness(t *testing.T, d *fakecsi.Driver, mutate func(*volume.Options)) *harness {
	lookup := driverLookup(d, startDriver(t, d))
	return newHarness(t, func(o *volume.Options) {
		o.CSIDrivers = lookup
		if mutate != nil {
			mutate(o)
		}
	})
}

func csiPod(driver string) *v1.Pod {
	return newPod("p", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{
		Driver:               driver,
		ReadOnly:             ptr(true),
		FSType:               ptr("ext4"),
		VolumeAttributes:     map[string]string{"size": "1Gi"},
		NodePublishSecretRef: &v1.LocalObjectReference{Name: "creds"},
	}}})
}

func TestCSI(t *testing.T) {
	for _, stage := range []bool{true, false} {
		t.Run(fmt.Sprintf("stage=%v", stage), func(t *testing.T) {
			d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: stage})
			h := csiHarness(t, d, nil).run()
			h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"key": []byte("s3cr3t")}})
			pod := csiPod("csi.example.com")
			require.NoError(t, h.mount(pod))

			handle := fmt.Sprintf("csi-%x", sha256.Sum256([]byte("uid-pdata")))
			target := filepath.Join(h.volDir(pod, volume.CSIPluginName, "data"), "mount")
			staging := filepath.Join(h.root, "plugins", "kubernetes.io", "csi", "csi.example.com", fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
			if stage {
				assert.Equal(t, []string{fakecsi.NodeGetCapabilities, fakecsi.NodeStageVolume, fakecsi.NodePublishVolume}, d.Methods())
				assert.Equal(t, map[string]string{handle: staging}, d.Staged())
			} else {
				assert.Equal(t, []string{fakecsi.NodeGetCapabilities, fakecsi.NodePublishVolume}, d.Methods())
				staging = ""
			}
			pub := d.Calls()[len(d.Calls())-1]
			assert.Equal(t, handle, pub.VolumeID)
			assert.Equal(t, target, pub.TargetPath)
			assert.Equal(t, staging, pub.StagingPath)
			assert.True(t, pub.ReadOnly)
			assert.Equal(t, "ext4", pub.FSType)
			assert.Equal(t, map[string]string{"key": "s3cr3t"}, pub.Secrets)
			assert.Equal(t, map[string]string{
				"size": "1Gi", "csi.storage.k8s.io/ephemeral": "true",
				"csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/pod.namespace": "ns",
				"csi.storage.k8s.io/pod.uid": "uid-p", "csi.storage.k8s.io/serviceAccount.name": "default",
			}, pub.VolumeContext)
			assert.Equal(t, handle, readFile(t, filepath.Join(target, "volume-id")))

			mts, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
			require.NoError(t, err)
			assert.Equal(t, target, mts[0].HostPath)
			assert.True(t, mts[0].Readonly)

			require.NoError(t, h.unmount(pod))
			methods := d.Methods()
			if stage {
				assert.Equal(t, []string{fakecsi.NodeUnpublishVolume, fakecsi.NodeUnstageVolume}, methods[len(methods)-2:])
				assert.False(t, exists(filepath.Dir(staging)), "staging directory removed")
			} else {
				assert.Equal(t, fakecsi.NodeUnpublishVolume, methods[len(methods)-1])
			}
			assert.Empty(t, d.Published())
			assert.Empty(t, d.Staged())
			assert.False(t, exists(h.volDir(pod, volume.CSIPluginName, "data")))
		})
	}
}

func TestCSIErrors(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com"})
	h := csiHarness(t, d, nil).run()
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"key": []byte("v")}})

	t.Run("unknown driver", func(t *testing.T) {
		pod := csiPod("nope.example.com")
		pod.UID, pod.Name = "uid-unknown", "unknown"
		err := h.failMount(pod)
		assert.ErrorContains(t, err, "driver name nope.example.com not found in the list of registered CSI drivers")
		h.m.RemovePod(pod.UID)
	})
	t.Run("publish fails, then works", func(t *testing.T) {
		d.Fail(fakecsi.NodePublishVolume, status.Error(codes.Internal, "disk on fire"))
		pod := csiPod("csi.example.com")
		err := h.failMount(pod)
		assert.ErrorContains(t, err, `NodePublishVolume: rpc error: code = Internal desc = disk on fire`)
		d.Fail(fakecsi.NodePublishVolume, nil)
		require.NoError(t, h.mountAfterBackoff(pod, 10*time.Second))
		require.NoError(t, h.unmount(pod))
	})
	t.Run("missing publish secret", func(t *testing.T) {
		pod := csiPod("csi.example.com")
		pod.UID, pod.Name = "uid-nosecret", "nosecret"
		pod.Spec.Volumes[0].CSI.NodePublishSecretRef.Name = "absent"
		assert.ErrorContains(t, h.failMount(pod), `fetching NodePublishSecretRef ns/absent failed: secret "absent" not found`)
		h.m.RemovePod(pod.UID)
	})
}

// TestCSIRestart: after a restart, a CSI volume whose pod is gone is
// unpublished and unstaged from what vol_data.json recorded.
func TestCSIRestart(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
	lookup := driverLookup(d, startDriver(t, d))
	h1 := newHarness(t, func(o *volume.Options) { o.CSIDrivers = lookup }).run()
	pod := csiPod("csi.example.com")
	pod.Spec.Volumes[0].CSI.NodePublishSecretRef = nil
	require.NoError(t, h1.mount(pod))
	h1.stop()
	require.Len(t, d.Published(), 1)
	require.Len(t, d.Staged(), 1)

	h2 := newHarness(t, func(o *volume.Options) { o.RootDir, o.CSIDrivers = h1.root, lookup })
	h2.run()
	waitFor(t, "the volume to be unpublished and unstaged", func() bool { return len(d.Published()) == 0 && len(d.Staged()) == 0 })
	waitFor(t, "the pod directory to go", func() bool { return !exists(volume.PodDir(h1.root, pod.UID)) })
}

// TestCSIHalfSetUpIsTornDown: staged, then the publish failed, then the pod
// went: the volume is still unstaged.
func TestCSIHalfSetUpIsTornDown(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
	h := csiHarness(t, d, nil).run()
	pod := csiPod("csi.example.com")
	pod.Spec.Volumes[0].CSI.NodePublishSecretRef = nil
	d.Fail(fakecsi.NodePublishVolume, status.Error(codes.Internal, "no"))
	require.Error(t, h.failMount(pod))
	require.Len(t, d.Staged(), 1)
	require.NoError(t, h.unmount(pod))
	assert.Empty(t, d.Staged())
	assert.Equal(t, fakecsi.NodeUnstageVolume, d.Methods()[len(d.Methods())-1])
	waitFor(t, "the pod directory to go", func() bool { return !exists(volume.PodDir(h.root, pod.UID)) })
}

// TestCSISELinuxRelabel: a writable CSI volume is relabelled by the
// runtime when its filesystem carries SELinux labels, as upstream's CSI
// mounter asks; a read-only one, or one on a filesystem without labels,
// is not.
func TestCSISELinuxRelabel(t *testing.T) {
	for _, tc := range []struct {
		name              string
		readOnly, labeled bool
		want              bool
	}{
		{name: "writable, labelled filesystem", labeled: true, want: true},
		{name: "writable, no labels", labeled: false, want: false},
		{name: "read-only, labelled filesystem", readOnly: true, labeled: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakecsi.New(fakecsi.Options{Name: "csi.example.com"})
			h := csiHarness(t, d, nil).run()
			h.mnt.SetSELinux(tc.labeled)
			h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"key": []byte("v")}})
			pod := csiPod("csi.example.com")
			pod.Spec.Volumes[0].CSI.ReadOnly = ptr(tc.readOnly)
			require.NoError(t, h.mount(pod))
			mts, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, mts[0].SelinuxRelabel)
			require.NoError(t, h.unmount(pod))
		})
	}
}
