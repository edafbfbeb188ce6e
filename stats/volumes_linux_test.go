package stats_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

// TestSummaryPersistentVolumes: a pod's persistent volumes as a
// volume.Manager set them up, in the summary as upstream's: named after
// the pod's volume, with the claim's pvcRef; a local volume with the
// figures of statfs of its mount, a CSI volume with its driver's
// NodeGetVolumeStats when the driver has GET_VOLUME_STATS and absent
// otherwise, a hostPath volume absent; none of them ephemeral storage.
func TestSummaryPersistentVolumes(t *testing.T) {
	for _, tt := range []struct {
		name        string
		source      v1.PersistentVolumeSource
		volumeStats bool // the CSI driver has GET_VOLUME_STATS
		want        bool // the volume is in the summary
	}{
		{name: "local", source: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "LOCAL"}}, want: true},
		{name: "CSI with GET_VOLUME_STATS", source: csiSource(), volumeStats: true, want: true},
		{name: "CSI without GET_VOLUME_STATS", source: csiSource()},
		{name: "hostPath", source: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "LOCAL"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			src := &volume.StaticSources{}
			if tt.source.Local != nil {
				tt.source.Local.Path = t.TempDir()
			}
			if tt.source.HostPath != nil {
				tt.source.HostPath.Path = t.TempDir()
			}
			claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-db-0", UID: "claim-uid"},
				Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
			src.SetPersistentVolumeClaim(claim)
			src.SetPersistentVolume(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{
				PersistentVolumeSource: tt.source, ClaimRef: &v1.ObjectReference{Namespace: "default", Name: "data-db-0", UID: "claim-uid"}}})
			src.SetCSIDriver(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
				Spec: storagev1.CSIDriverSpec{AttachRequired: new(bool)}})
			driver := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true, VolumeStats: tt.volumeStats})
			driver.SetUsage("vol-1", &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 10 << 30, Available: 7 << 30, Used: 3 << 30},
				&csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Total: 1000, Available: 900, Used: 100})
			sock := serveDriver(t, driver)
			vm, err := volume.New(volume.Options{RootDir: n.rootDir, Mounter: &volumetest.Mounter{}, Clock: n.clk,
				Sources:    volume.Sources{ConfigMaps: src, Secrets: src, Claims: src},
				CSIDrivers: func(name string) (string, bool) { return sock, name == driver.Name() }})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- vm.Run(ctx) }()
			t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

			n.runPod("default", "db", "app")
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "uid-db"}, Spec: v1.PodSpec{
				Volumes: []v1.Volume{
					{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
					{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				},
				Containers: []v1.Container{{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
			mountCtx, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			require.NoError(t, vm.WaitForMount(mountCtx, pod))

			s, err := n.provider(stats.Options{Volumes: vm}).Summary(ctx, false)
			require.NoError(t, err)
			require.Len(t, s.Pods, 1)
			vols := s.Pods[0].VolumeStats
			if !tt.want {
				require.Len(t, vols, 1)
				assert.Equal(t, "scratch", vols[0].Name, "only the walked emptyDir")
				return
			}
			require.Len(t, vols, 2)
			assert.Equal(t, "scratch", vols[0].Name)
			data := vols[1]
			assert.Equal(t, "data", data.Name, "the pod's volume, not the persistent volume")
			assert.Equal(t, &statsv1alpha1.PVCReference{Name: "data-db-0", Namespace: "default"}, data.PVCRef)
			assert.True(t, data.Time.Time.Equal(t0))
			assert.Equal(t, uint64(0), deref(s.Pods[0].EphemeralStorage.UsedBytes), "an empty emptyDir; the claim's volume is not ephemeral")
			if tt.source.Local != nil {
				var st unix.Statfs_t
				require.NoError(t, unix.Statfs(n.volume("uid-db", "kubernetes.io~local-volume", "pv-1"), &st))
				assert.Equal(t, st.Blocks*uint64(st.Bsize), deref(data.CapacityBytes), "statfs of the mount")
				assert.Equal(t, st.Files, deref(data.Inodes))
				return
			}
			assert.Equal(t, uint64(10<<30), deref(data.CapacityBytes))
			assert.Equal(t, uint64(7<<30), deref(data.AvailableBytes))
			assert.Equal(t, uint64(3<<30), deref(data.UsedBytes))
			assert.Equal(t, uint64(1000), deref(data.Inodes))
			assert.Equal(t, uint64(900), deref(data.InodesFree))
			assert.Equal(t, uint64(100), deref(data.InodesUsed))
		})
	}
}

func csiSource() v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}}
}

// serveDriver serves d on a unix socket until the test ends and returns
// the socket's path.
func serveDriver(t *testing.T, d *fakecsi.Driver) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: socket paths have at most 107 bytes
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
