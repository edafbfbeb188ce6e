package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Measurer is implemented by plugins that measure the volumes they set
// up, as upstream's volume plugins give their mounters a MetricsProvider.
// Of the built-ins, local (statfs(2) of the mount, upstream's
// MetricsStatFS) and csi (the driver's NodeGetVolumeStats, upstream's
// metricsCsi) are; hostPath is not (upstream's MetricsNil), and the
// emptyDir, configMap, secret, downwardAPI and projected volumes are
// measured by package stats' walk of their directories instead.
type Measurer interface {
	// Measure measures v, a volume the plugin set up (v.Pod and v.Spec
	// are set, and v.PersistentVolume for a claim's volume): the
	// capacity, availability and inodes of its filesystem and what it
	// uses, every figure set, at Time. An error wrapping
	// ErrMetricsNotSupported says the volume cannot be measured
	// (upstream's NotSupported metrics error).
	Measure(ctx context.Context, v *Volume) (statsv1alpha1.FsStats, error)
}

// ErrMetricsNotSupported is wrapped by a Measurer's error for a volume it
// cannot measure: a CSI driver without the GET_VOLUME_STATS capability
// ("metrics are not supported for csi.example.com volumes", upstream's
// message).
var ErrMetricsNotSupported = errors.New("metrics are not supported")

var (
	_ Measurer = (*localPlugin)(nil)
	_ Measurer = (*csiPlugin)(nil)
)

// MeasureVolumes measures the volumes set up for the pod whose plugins
// are Measurers (local and CSI volumes, persistent or, for CSI, inline)
// and returns their stats for the Summary API, sorted by name, as
// upstream's volume stat calculator makes them: Name is the volume's name
// in the pod spec (not the persistent volume's), PVCRef names the claim of
// a persistentVolumeClaim or generic ephemeral volume (in the pod's
// namespace; nil for another volume), FsStats is the plugin's
// measurement. A volume that cannot be measured is left out: silently when
// its plugin does not support it (ErrMetricsNotSupported), with a debug
// log otherwise, as upstream. A pod the Manager does not know, or whose
// volumes are not set up yet, has none. Volumes found on disk after a
// restart are measured once their pod's WaitForMount has set them up
// again. It calls the plugins (a CSI driver over its socket) from the
// caller's goroutine, one volume after the other, each bounded by ctx and,
// for CSI, CSITimeout. *Manager has the method set of stats.VolumeMeasurer.
func (m *Manager) MeasureVolumes(ctx context.Context, uid types.UID) []statsv1alpha1.VolumeStats {
	m.mu.Lock()
	vols := m.core.setUpVolumes(uid)
	m.mu.Unlock()
	var out []statsv1alpha1.VolumeStats
	for _, sv := range vols {
		ms, ok := sv.plugin.(Measurer)
		if !ok {
			continue
		}
		v := &Volume{PodUID: uid, Name: sv.name, Dir: VolumeDir(m.opts.RootDir, uid, sv.plugin.Name(), sv.dir),
			Pod: sv.pod, Spec: sv.spec, PersistentVolume: sv.pv, ReadOnly: sv.readOnly}
		fs, err := ms.Measure(ctx, v)
		if err != nil {
			if !errors.Is(err, ErrMetricsNotSupported) {
				m.log.Debug("Failed to calculate volume metrics", "pod", sv.pod.Namespace+"/"+sv.pod.Name, "podUID", uid, "volumeName", sv.name, "err", err)
			}
			continue
		}
		out = append(out, statsv1alpha1.VolumeStats{Name: sv.name, PVCRef: pvcRef(sv.pod, sv.spec), FsStats: fs})
	}
	return out
}

// pvcRef is the summary's reference to the claim of one of pod's volumes,
// as upstream's volume stat calculator sets it: a persistentVolumeClaim's
// claim, or a generic ephemeral volume's (ClaimName), in the pod's
// namespace; nil for any other volume.
func pvcRef(pod *v1.Pod, vol *v1.Volume) *statsv1alpha1.PVCReference {
	name, ok := ClaimName(pod, vol)
	if !ok {
		return nil
	}
	return &statsv1alpha1.PVCReference{Name: name, Namespace: pod.Namespace}
}

// statFS is what statfs(2) says of a filesystem, in blocks of bsize bytes
// and in inodes.
type statFS struct {
	blocks, bfree, bavail uint64
	files, ffree          uint64
	bsize                 uint64
}

// fsStats turns a statfs answer into FsStats as upstream's MetricsStatFS
// does: capacity is every block, available the blocks free for
// unprivileged users, used the blocks that are not free; inodes and the
// free ones, used the difference.
func (s statFS) fsStats(at time.Time) statsv1alpha1.FsStats {
	capacity, available := s.blocks*s.bsize, s.bavail*s.bsize
	used := sub(s.blocks, s.bfree) * s.bsize
	inodes, free := s.files, s.ffree
	inodesUsed := sub(s.files, s.ffree)
	return statsv1alpha1.FsStats{Time: metav1.NewTime(at), AvailableBytes: &available, CapacityBytes: &capacity, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &inodesUsed}
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// Measure implements Measurer: statfs(2) of the volume's directory, where
// the local path is bind-mounted, as upstream's local plugin measures its
// filesystem volumes (MetricsStatFS: the filesystem's figures, not du of
// the volume).
func (p *localPlugin) Measure(_ context.Context, v *Volume) (statsv1alpha1.FsStats, error) {
	at := p.now()
	st, err := p.statfs(v.Dir)
	if err != nil {
		return statsv1alpha1.FsStats{}, fmt.Errorf("failed to get FsInfo due to error %w", err)
	}
	return st.fsStats(at), nil
}

// csiIdentity is the driver and volume handle of a CSI volume, persistent
// or inline, as SetUp published it.
func csiIdentity(v *Volume) (driver, handle string) {
	if pv := v.PersistentVolume; pv != nil && pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	if v.Spec != nil && v.Spec.CSI != nil {
		return v.Spec.CSI.Driver, csiVolumeHandle(string(v.PodUID), v.Name)
	}
	return "", ""
}

// Measure implements Measurer as upstream's metricsCsi: the driver's
// NodeGetVolumeStats of the volume handle at the publish target
// (<volume dir>/mount), when its node service has GET_VOLUME_STATS, else
// ErrMetricsNotSupported. As upstream's, the request carries no
// staging_target_path. Its time is when the measurement began.
func (p *csiPlugin) Measure(ctx context.Context, v *Volume) (statsv1alpha1.FsStats, error) {
	at := p.now()
	driver, handle := csiIdentity(v)
	if handle == "" {
		return statsv1alpha1.FsStats{}, errors.New("missing volume id")
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	c, err := p.dial(driver)
	if err != nil {
		return statsv1alpha1.FsStats{}, err
	}
	defer c.conn.Close()
	caps, err := c.capabilities(ctx)
	if err != nil {
		return statsv1alpha1.FsStats{}, fmt.Errorf("CSI driver %s: %w", driver, err)
	}
	if !caps.volumeStats {
		return statsv1alpha1.FsStats{}, fmt.Errorf("%w for %s volumes", ErrMetricsNotSupported, driver)
	}
	resp, err := c.node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: filepath.Join(v.Dir, "mount")})
	if err != nil {
		return statsv1alpha1.FsStats{}, fmt.Errorf("CSI driver %s: NodeGetVolumeStats: %w", driver, err)
	}
	return csiFsStats(resp, at)
}

// csiFsStats turns a NodeGetVolumeStats answer into FsStats as upstream's
// CSI client does (without CSIVolumeHealth, off in 1.36): an answer
// without usage is an error; every figure starts at zero, a BYTES usage
// gives the available, total (capacity) and used bytes, an INODES usage
// the free (available), total and used inodes; a usage of another unit
// is ignored.
func csiFsStats(resp *csipb.NodeGetVolumeStatsResponse, at time.Time) (statsv1alpha1.FsStats, error) {
	usage := resp.GetUsage()
	if usage == nil {
		return statsv1alpha1.FsStats{}, errors.New("failed to get usage from response. usage is nil")
	}
	var available, capacity, used, inodes, free, inodesUsed uint64
	for _, u := range usage {
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			available, capacity, used = uint64(u.GetAvailable()), uint64(u.GetTotal()), uint64(u.GetUsed())
		case csipb.VolumeUsage_INODES:
			free, inodes, inodesUsed = uint64(u.GetAvailable()), uint64(u.GetTotal()), uint64(u.GetUsed())
		}
	}
	return statsv1alpha1.FsStats{Time: metav1.NewTime(at), AvailableBytes: &available, CapacityBytes: &capacity, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &inodesUsed}, nil
}
