package volume_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

func TestCSIAccessMode(t *testing.T) {
	for _, tt := range []struct {
		modes       []v1.PersistentVolumeAccessMode
		multiWriter bool
		want        csipb.VolumeCapability_AccessMode_Mode
	}{
		{modes: nil, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{modes: nil, multiWriter: true, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, multiWriter: true, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, multiWriter: true, want: csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany, v1.ReadWriteOnce}, want: csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, multiWriter: true, want: csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{modes: []v1.PersistentVolumeAccessMode{"Bogus"}, want: csipb.VolumeCapability_AccessMode_UNKNOWN},
	} {
		assert.Equal(t, tt.want, volume.CSIAccessMode(tt.modes, tt.multiWriter), "%v multiWriter=%v", tt.modes, tt.multiWriter)
	}
}

// csiPV is a claim "claim" bound to a CSI persistent volume "pv-1" of
// driver csi.example.com, handle "vol-1", with stage and publish secrets,
// mount options and attributes.
func csiPV(src *volume.StaticSources, mode v1.PersistentVolumeAccessMode) {
	c, pv := boundClaim("claim", "pv-1", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
		Driver: "csi.example.com", VolumeHandle: "vol-1", FSType: "xfs",
		VolumeAttributes:     map[string]string{"pool": "fast"},
		NodeStageSecretRef:   &v1.SecretReference{Namespace: "storage", Name: "stage-creds"},
		NodePublishSecretRef: &v1.SecretReference{Namespace: "storage", Name: "publish-creds"},
	}})
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{mode}
	pv.Spec.MountOptions = []string{"noatime"}
	src.SetPersistentVolumeClaim(c)
	src.SetPersistentVolume(pv)
	src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "stage-creds"}, Data: map[string][]byte{"s": []byte("stage")}})
	src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "publish-creds"}, Data: map[string][]byte{"p": []byte("publish")}})
}

// csiClaimHarness is a harness whose static sources also give claims,
// with d registered.
func csiClaimHarness(t *testing.T, d *fakecsi.Driver) *harness {
	lookup := driverLookup(d, startDriver(t, d))
	return newHarness(t, func(o *volume.Options) {
		o.CSIDrivers = lookup
		o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources)
	}).run()
}

// csiDriver is the CSIDriver of csi.example.com.
func csiDriver(attachRequired, podInfoOnMount bool) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(attachRequired), PodInfoOnMount: ptr(podInfoOnMount)}}
}

func jsonFile(t *testing.T, p string) map[string]string {
	t.Helper()
	var out map[string]string
	require.NoError(t, json.Unmarshal([]byte(readFile(t, p)), &out))
	return out
}

// TestCSIPersistentVolume: two pods use one CSI persistent volume. With a
// driver that stages, the first pod's set up stages it once at upstream's
// global mount path (vol_data.json beside it) with the stage secret, then
// publishes it at <pod>/volumes/kubernetes.io~csi/pv-1/mount; the second
// pod only publishes. The first pod's removal only unpublishes; the last
// one's unpublishes, then unstages and removes the global directory.
// Without staging, only publishes. The access mode, fsType, mount options,
// volume context, secrets and read-only flag reach the driver.
func TestCSIPersistentVolume(t *testing.T) {
	for _, stage := range []bool{true, false} {
		t.Run(fmt.Sprintf("stage=%v", stage), func(t *testing.T) {
			d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: stage, SingleNodeMultiWriter: true})
			h := csiClaimHarness(t, d)
			csiPV(h.src, v1.ReadWriteOncePod)
			h.src.SetCSIDriver(csiDriver(false, false))
			p1, p2 := claimPod(false), claimPod(true)
			p2.Name, p2.UID = "q", "uid-q"

			require.NoError(t, h.mount(p1))
			require.NoError(t, h.mount(p2))
			global := filepath.Join(h.root, "plugins", "kubernetes.io", "csi", "csi.example.com", fmt.Sprintf("%x", sha256.Sum256([]byte("vol-1"))))
			staging := filepath.Join(global, "globalmount")
			t1 := filepath.Join(h.root, "pods", "uid-p", "volumes", "kubernetes.io~csi", "pv-1", "mount")
			t2 := filepath.Join(h.root, "pods", "uid-q", "volumes", "kubernetes.io~csi", "pv-1", "mount")
			want := []string{fakecsi.NodeGetCapabilities, fakecsi.NodeStageVolume, fakecsi.NodePublishVolume, fakecsi.NodeGetCapabilities, fakecsi.NodePublishVolume}
			wantStaging := staging
			if !stage {
				want = []string{fakecsi.NodeGetCapabilities, fakecsi.NodePublishVolume, fakecsi.NodeGetCapabilities, fakecsi.NodePublishVolume}
				wantStaging = ""
			}
			require.Equal(t, want, d.Methods())
			calls := d.Calls()
			volCtx := map[string]string{"pool": "fast"}
			for _, c := range calls[1:] {
				if c.Method == fakecsi.NodeGetCapabilities {
					continue
				}
				assert.Equal(t, "vol-1", c.VolumeID)
				assert.Equal(t, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, c.AccessMode)
				assert.Equal(t, []string{"noatime"}, c.MountFlags)
				assert.Equal(t, "xfs", c.FSType)
				assert.Equal(t, volCtx, c.VolumeContext)
				assert.Equal(t, wantStaging, c.StagingPath)
			}
			if stage {
				assert.Equal(t, map[string]string{"s": "stage"}, calls[1].Secrets)
				assert.Equal(t, map[string]string{"driverName": "csi.example.com", "volumeHandle": "vol-1"}, jsonFile(t, filepath.Join(global, "vol_data.json")))
			}
			pub1, pub2 := calls[len(calls)-3], calls[len(calls)-1]
			assert.Equal(t, t1, pub1.TargetPath)
			assert.False(t, pub1.ReadOnly)
			assert.Equal(t, t2, pub2.TargetPath)
			assert.True(t, pub2.ReadOnly, "the claim's readOnly")
			assert.Equal(t, map[string]string{"p": "publish"}, pub2.Secrets)
			data := jsonFile(t, filepath.Join(filepath.Dir(t1), "vol_data.json"))
			assert.Equal(t, "pv-1", data["specVolID"])
			assert.Equal(t, "Persistent", data["volumeLifecycleMode"])
			assert.Equal(t, fmt.Sprintf("csi-%x", sha256.Sum256([]byte("vol-1csi.example.comnode-1"))), data["attachmentID"])
			mounts, err := h.m.Mounts(p2, &p2.Spec.Containers[0])
			require.NoError(t, err)
			assert.Equal(t, t2, mounts[0].HostPath)
			assert.True(t, mounts[0].Readonly)

			n := len(d.Methods())
			require.NoError(t, h.unmount(p1))
			assert.Equal(t, []string{fakecsi.NodeUnpublishVolume}, d.Methods()[n:], "another pod still uses the volume")
			if stage {
				assert.DirExists(t, staging)
			}
			require.NoError(t, h.unmount(p2))
			want = []string{fakecsi.NodeUnpublishVolume, fakecsi.NodeUnpublishVolume}
			if stage {
				want = append(want, fakecsi.NodeUnstageVolume)
			}
			assert.Equal(t, want, d.Methods()[n:])
			assert.Empty(t, d.Staged())
			assert.Empty(t, d.Published())
			assert.NoDirExists(t, global)
			waitFor(t, "the pod directories to go", func() bool {
				return !exists(volume.PodDir(h.root, p1.UID)) && !exists(volume.PodDir(h.root, p2.UID))
			})
		})
	}
}

// TestCSIPersistentVolumePodInfo: a CSIDriver with podInfoOnMount gives a
// persistent volume's driver the pod's information, ephemeral "false".
func TestCSIPersistentVolumePodInfo(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com"})
	h := csiClaimHarness(t, d)
	csiPV(h.src, v1.ReadWriteOnce)
	h.src.SetCSIDriver(csiDriver(false, true))
	pod := claimPod(false)
	require.NoError(t, h.mount(pod))
	pub := d.Calls()[len(d.Calls())-1]
	assert.Equal(t, map[string]string{"pool": "fast", volume.CSIEphemeralKey: "false", volume.CSIPodNameKey: "p",
		volume.CSIPodNamespaceKey: "ns", volume.CSIPodUIDKey: "uid-p", volume.CSIServiceAccountNameKey: "default"}, pub.VolumeContext)
	assert.Equal(t, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, pub.AccessMode)
	require.NoError(t, h.unmount(pod))
}

// TestCSIPersistentVolumeNeedsAttaching: a driver without a CSIDriver, or
// whose CSIDriver says attachRequired, is held: the node attaches nothing.
// The volume is listed as unattached and nothing is staged or published.
func TestCSIPersistentVolumeNeedsAttaching(t *testing.T) {
	for _, tt := range []struct {
		name   string
		driver *storagev1.CSIDriver
	}{
		{name: "no CSIDriver"},
		{name: "attachRequired", driver: csiDriver(true, false)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
			h := csiClaimHarness(t, d)
			csiPV(h.src, v1.ReadWriteOnce)
			if tt.driver != nil {
				h.src.SetCSIDriver(tt.driver)
			}
			err := h.failMount(claimPod(false))
			assert.ErrorIs(t, err, volume.ErrNotAttached)
			assert.Contains(t, err.Error(), `unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: timed out waiting for the condition; volume "data": volume not attached: volume pv-1 of CSI driver csi.example.com needs attaching, which this node does not do: Volume not attached according to node status`)
			assert.Empty(t, d.Methods())
		})
	}
}
