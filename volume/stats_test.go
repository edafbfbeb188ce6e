package volume_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

// fsStats is FsStats with every figure set, at t0.
func fsStats(capacity, available, used, inodes, free, inodesUsed uint64) statsv1alpha1.FsStats {
	return statsv1alpha1.FsStats{Time: metav1.NewTime(t0), CapacityBytes: &capacity, AvailableBytes: &available, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &inodesUsed}
}

// TestCSIFsStats: a NodeGetVolumeStats answer becomes FsStats as
// upstream's CSI client makes it.
func TestCSIFsStats(t *testing.T) {
	bytes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 1000, Available: 600, Used: 400}
	inodes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Total: 50, Available: 45, Used: 5}
	for _, tt := range []struct {
		name    string
		usage   []*csipb.VolumeUsage
		want    statsv1alpha1.FsStats
		wantErr string
	}{
		{name: "no usage", wantErr: "failed to get usage from response. usage is nil"},
		{name: "bytes and inodes", usage: []*csipb.VolumeUsage{bytes, inodes}, want: fsStats(1000, 600, 400, 50, 45, 5)},
		{name: "bytes only: inodes zero", usage: []*csipb.VolumeUsage{bytes}, want: fsStats(1000, 600, 400, 0, 0, 0)},
		{name: "unknown unit and nil ignored", usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_UNKNOWN, Total: 9}, nil, inodes},
			want: fsStats(0, 0, 0, 50, 45, 5)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := volume.CSIFsStats(&csipb.NodeGetVolumeStatsResponse{Usage: tt.usage}, t0)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestMeasureVolumes: the volumes a Manager set up for a pod, measured as
// upstream's volume stat calculator measures them, named after the pod's
// volume with the claim's reference: a local persistent volume by statfs
// of its mount (used is the filesystem's, not du), a CSI volume by its
// driver's NodeGetVolumeStats of the volume handle at the publish target
// (no staging path, as upstream) when the driver has GET_VOLUME_STATS and
// not otherwise; a hostPath persistent volume and an emptyDir (which
// package stats walks) are not.
func TestMeasureVolumes(t *testing.T) {
	bytes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 10 << 30, Available: 7 << 30, Used: 3 << 30}
	inodes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Total: 1000, Available: 900, Used: 100}
	csiStats := fsStats(10<<30, 7<<30, 3<<30, 1000, 900, 100)
	// 4KiB blocks: 1000 of them, 600 free, 500 free to users; 300
	// inodes, 200 free.
	localFS := volume.StatFS{Blocks: 1000, Bfree: 600, Bavail: 500, Files: 300, Ffree: 200, Bsize: 4096}
	localStats := fsStats(1000*4096, 500*4096, 400*4096, 300, 200, 100)
	claimRef := &statsv1alpha1.PVCReference{Name: "claim", Namespace: "ns"}
	local := func(claim string) func(t *testing.T, h *harness, pod *v1.Pod) {
		return func(t *testing.T, h *harness, pod *v1.Pod) {
			c, pv := boundClaim(claim, "local-pv", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
			ownedBy(c, pod)
			h.src.SetPersistentVolumeClaim(c)
			h.src.SetPersistentVolume(pv)
		}
	}
	for _, tt := range []struct {
		name   string
		pod    func() *v1.Pod
		driver *fakecsi.Options // a CSI driver csi.example.com
		setup  func(t *testing.T, h *harness, pod *v1.Pod)
		statfs error // the local statfs fails
		want   []statsv1alpha1.VolumeStats
		// wantStats is the NodeGetVolumeStats call expected: its volume
		// ID and its directory under the pod's volumes (its volume path
		// is that directory's mount).
		wantStats  *fakecsi.Call
		wantNoCall bool // NodeGetVolumeStats is never called
		failStats  bool // NodeGetVolumeStats fails
		wantStatfs bool // the local volume's mount is statfs'd
	}{
		{name: "local claim", pod: func() *v1.Pod { return claimPod(false) }, setup: local("claim"), wantStatfs: true,
			want: []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: claimRef, FsStats: localStats}}},
		{name: "local ephemeral", pod: ephemeralPod, setup: local("p-data"), wantStatfs: true,
			want: []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: &statsv1alpha1.PVCReference{Name: "p-data", Namespace: "ns"}, FsStats: localStats}}},
		{name: "local statfs fails", pod: func() *v1.Pod { return claimPod(false) }, setup: local("claim"), statfs: errors.New("EIO"), wantStatfs: true},
		{name: "hostPath claim", pod: func() *v1.Pod { return claimPod(false) }, setup: func(t *testing.T, h *harness, _ *v1.Pod) {
			c, pv := boundClaim("claim", "host-pv", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}})
			h.src.SetPersistentVolumeClaim(c)
			h.src.SetPersistentVolume(pv)
		}},
		{name: "emptyDir", pod: func() *v1.Pod {
			return newPod("p", v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		}},
		{name: "CSI claim with GET_VOLUME_STATS", pod: func() *v1.Pod { return claimPod(false) },
			driver: &fakecsi.Options{VolumeStats: true}, setup: csiClaim,
			want:      []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: claimRef, FsStats: csiStats}},
			wantStats: &fakecsi.Call{VolumeID: "vol-1", TargetPath: filepath.Join("kubernetes.io~csi", "pv-1")}},
		{name: "CSI claim staged, with GET_VOLUME_STATS", pod: func() *v1.Pod { return claimPod(true) },
			driver: &fakecsi.Options{VolumeStats: true, StageUnstage: true}, setup: csiClaim,
			want:      []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: claimRef, FsStats: csiStats}},
			wantStats: &fakecsi.Call{VolumeID: "vol-1", TargetPath: filepath.Join("kubernetes.io~csi", "pv-1")}},
		{name: "CSI claim without GET_VOLUME_STATS", pod: func() *v1.Pod { return claimPod(false) },
			driver: &fakecsi.Options{StageUnstage: true}, setup: csiClaim, wantNoCall: true},
		{name: "CSI claim whose driver fails", pod: func() *v1.Pod { return claimPod(false) },
			driver: &fakecsi.Options{VolumeStats: true}, setup: csiClaim, failStats: true,
			wantStats: &fakecsi.Call{VolumeID: "vol-1", TargetPath: filepath.Join("kubernetes.io~csi", "pv-1")}},
		{name: "inline CSI volume", pod: func() *v1.Pod { return csiPod("csi.example.com") },
			driver: &fakecsi.Options{VolumeStats: true}, setup: func(_ *testing.T, h *harness, _ *v1.Pod) {
				h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}})
			},
			want: []statsv1alpha1.VolumeStats{{Name: "data", FsStats: csiStats}},
			wantStats: &fakecsi.Call{VolumeID: fmt.Sprintf("csi-%x", sha256.Sum256([]byte("uid-pdata"))),
				TargetPath: filepath.Join("kubernetes.io~csi", "data")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var d *fakecsi.Driver
			var h *harness
			if tt.driver != nil {
				o := *tt.driver
				o.Name = "csi.example.com"
				d = fakecsi.New(o)
				d.SetUsage("vol-1", bytes, inodes)
				d.SetUsage(fmt.Sprintf("csi-%x", sha256.Sum256([]byte("uid-pdata"))), bytes, inodes)
				lookup := driverLookup(d, startDriver(t, d))
				h = newHarness(t, func(o *volume.Options) {
					o.CSIDrivers = lookup
					o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources)
				})
			} else {
				h = newHarness(t, func(o *volume.Options) { o.Sources.Claims = o.Sources.Secrets.(*volume.StaticSources) })
			}
			var asked []string
			volume.SetStatfs(h.m, func(path string) (volume.StatFS, error) {
				asked = append(asked, path)
				return localFS, tt.statfs
			})
			h.run()
			pod := tt.pod()
			if tt.setup != nil {
				tt.setup(t, h, pod)
			}
			ctx := context.Background()
			assert.Empty(t, h.m.MeasureVolumes(ctx, pod.UID), "nothing set up yet")
			require.NoError(t, h.mount(pod))
			if tt.failStats {
				d.Fail(fakecsi.NodeGetVolumeStats, errors.New("down"))
			}

			got := h.m.MeasureVolumes(ctx, pod.UID)
			assert.Equal(t, tt.want, got)
			if tt.wantStatfs {
				assert.Equal(t, []string{h.volDir(pod, volume.LocalPluginName, "local-pv")}, asked, "statfs of the mount")
			} else {
				assert.Empty(t, asked)
			}
			if d != nil {
				var calls []fakecsi.Call
				for _, c := range d.Calls() {
					if c.Method == fakecsi.NodeGetVolumeStats {
						calls = append(calls, c)
					}
				}
				switch {
				case tt.wantNoCall:
					assert.Empty(t, calls)
				case tt.wantStats != nil:
					want := *tt.wantStats
					want.Method = fakecsi.NodeGetVolumeStats
					want.TargetPath = filepath.Join(volume.PodVolumesDir(h.root, pod.UID), want.TargetPath, "mount")
					assert.Equal(t, []fakecsi.Call{want}, calls)
				}
			}

			require.NoError(t, h.unmount(pod))
			assert.Empty(t, h.m.MeasureVolumes(ctx, pod.UID), "torn down")
		})
	}
}

// csiClaim binds the claim "claim" to the CSI persistent volume "pv-1"
// (csiPV) of a driver that needs no attaching.
func csiClaim(_ *testing.T, h *harness, _ *v1.Pod) {
	csiPV(h.src, v1.ReadWriteOnce)
	h.src.SetCSIDriver(csiDriver(false, false))
}

// TestMeasureVolumesOfAnUnknownPod: nothing.
func TestMeasureVolumesOfAnUnknownPod(t *testing.T) {
	h := newHarness(t, nil)
	assert.Nil(t, h.m.MeasureVolumes(context.Background(), "nobody"))
}
