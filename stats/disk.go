package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// disk measures the filesystems for one full Summary: the node filesystem
// once, and each other filesystem (a writable layer's, the image
// filesystem) once per mountpoint.
type disk struct {
	p      *Provider
	nodeFs *FsInfo
	fs     map[string]*FsInfo // by path; nil: not measurable
}

func (p *Provider) newDisk(ctx context.Context) (*disk, error) {
	path := hoststats.ExistingParent(p.o.RootDir)
	info, err := p.o.Host.Filesystem(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("get rootFs stats: %w", err)
	}
	return &disk{p: p, nodeFs: info, fs: map[string]*FsInfo{path: info}}, nil
}

// fsInfo measures the filesystem at mountpoint, or returns nil when it
// cannot be (a runtime in another mount namespace, or the fake runtime,
// names a path this process does not see): upstream then leaves the
// filesystem's size out and keeps the rest.
func (d *disk) fsInfo(ctx context.Context, mountpoint string) *FsInfo {
	if info, ok := d.fs[mountpoint]; ok {
		return info
	}
	info, err := d.p.o.Host.Filesystem(ctx, mountpoint)
	if err != nil {
		d.p.log.Debug("Failed to get the info of the filesystem with mountpoint", "mountpoint", mountpoint, "err", err)
		info = nil
	}
	d.fs[mountpoint] = info
	return info
}

// fsStatsOf is a filesystem's size, without usage: the base of a
// consumer's FsStats.
func fsStatsOf(info *FsInfo) *statsv1alpha1.FsStats {
	st := &statsv1alpha1.FsStats{Time: metav1.NewTime(info.Time)}
	setSize(st, info)
	return st
}

func setSize(st *statsv1alpha1.FsStats, info *FsInfo) {
	avail, capacity := info.AvailableBytes, info.CapacityBytes
	st.AvailableBytes, st.CapacityBytes = &avail, &capacity
	if info.Inodes > 0 {
		inodes, free := info.Inodes, info.InodesFree
		st.Inodes, st.InodesFree = &inodes, &free
	}
}

// nodeFsStats is the node filesystem (NodeStats.Fs).
func (d *disk) nodeFsStats() *statsv1alpha1.FsStats {
	st := fsStatsOf(d.nodeFs)
	used := d.nodeFs.UsedBytes
	st.UsedBytes = &used
	if d.nodeFs.Inodes >= d.nodeFs.InodesFree && d.nodeFs.Inodes > 0 {
		iu := d.nodeFs.Inodes - d.nodeFs.InodesFree
		st.InodesUsed = &iu
	}
	return st
}

// runtimeFs is the runtime's image and container filesystems, from
// ImageFsInfo: their usage as the runtime reports it, their size when this
// process can measure it. Only the first of each counts, as upstream. The
// container filesystem is the image filesystem, unless the runtime puts the
// writable layers at another mountpoint (cri.SplitContainerFs, upstream's
// KubeletSeparateDiskGC, as its cadvisor stats provider reports CRI-O's
// split disk; its CRI stats provider reports the image filesystem twice).
func (p *Provider) runtimeFs(ctx context.Context, d *disk) (*statsv1alpha1.RuntimeStats, error) {
	resp, err := p.o.Runtime.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("get imageFs stats: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return nil, fmt.Errorf("get imageFs stats: imageFs information is unavailable")
	}
	im := d.runtimeFsStats(ctx, fss[0])
	if cri.SplitContainerFs(resp) {
		return &statsv1alpha1.RuntimeStats{ImageFs: im, ContainerFs: d.runtimeFsStats(ctx, resp.GetContainerFilesystems()[0])}, nil
	}
	cf := *im
	return &statsv1alpha1.RuntimeStats{ImageFs: im, ContainerFs: &cf}, nil
}

// runtimeFsStats is one of the runtime's filesystems: its usage from the
// runtime, its size and free inodes from its mountpoint when measurable.
func (d *disk) runtimeFsStats(ctx context.Context, fs *runtimeapi.FilesystemUsage) *statsv1alpha1.FsStats {
	st := &statsv1alpha1.FsStats{Time: timeOf(fs.GetTimestamp()), UsedBytes: zeroIfNil(fs.GetUsedBytes()), InodesUsed: valueOf(fs.GetInodesUsed())}
	if mp := fs.GetFsId().GetMountpoint(); mp != "" {
		if info := d.fsInfo(ctx, mp); info != nil {
			setSize(st, info)
		}
	}
	return st
}

// rootfs is a container's writable layer: its usage from the runtime, the
// size of the filesystem it is on when measurable.
func (d *disk) rootfs(ctx context.Context, wl *runtimeapi.FilesystemUsage) *statsv1alpha1.FsStats {
	st := &statsv1alpha1.FsStats{}
	if wl == nil {
		return st
	}
	st.Time = timeOf(wl.GetTimestamp())
	st.UsedBytes, st.InodesUsed = valueOf(wl.GetUsedBytes()), valueOf(wl.GetInodesUsed())
	if mp := wl.GetFsId().GetMountpoint(); mp != "" {
		if info := d.fsInfo(ctx, mp); info != nil {
			setSize(st, info)
		}
	}
	return st
}

// podLogDir is <PodLogsDir>/<namespace>_<name>_<uid>, when each part is a
// plain path element.
func (p *Provider) podLogDir(namespace, name, uid string) (string, bool) {
	if !hoststats.SafeName(namespace) || !hoststats.SafeName(name) || !hoststats.SafeName(uid) {
		return "", false
	}
	return filepath.Join(p.o.PodLogsDir, namespace+"_"+name+"_"+uid), true
}

// containerLogs is the usage of the files in the container's log
// directory, on the node filesystem; nil when it cannot be read.
func (d *disk) containerLogs(ctx context.Context, md *runtimeapi.PodSandboxMetadata, container string) *statsv1alpha1.FsStats {
	dir, ok := d.p.podLogDir(md.GetNamespace(), md.GetName(), md.GetUid())
	if !ok || !hoststats.SafeName(container) {
		return nil
	}
	return d.files(ctx, filepath.Join(dir, container))
}

// files is the usage of the files (not the directories) directly in dir,
// as upstream measures log directories; nil when dir cannot be read.
func (d *disk) files(ctx context.Context, dir string) *statsv1alpha1.FsStats {
	entries, err := os.ReadDir(dir)
	if err != nil {
		d.p.log.Debug("Unable to fetch log stats", "dir", dir, "err", err)
		return nil
	}
	st := fsStatsOf(d.nodeFs)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		du, err := d.p.o.Host.DiskUsage(ctx, filepath.Join(dir, e.Name()))
		if err != nil {
			return nil
		}
		addUsage(st, du)
	}
	return st
}

func addUsage(st *statsv1alpha1.FsStats, du DiskUsage) {
	b, n := du.Bytes, du.Inodes
	st.UsedBytes, st.InodesUsed = add(st.UsedBytes, &b), add(st.InodesUsed, &n)
	st.Time = later(st.Time, metav1.NewTime(du.Time))
}

// pod fills in a pod's volumes and ephemeral storage; its containers'
// Rootfs and Logs are already there.
func (d *disk) pod(ctx context.Context, ps *statsv1alpha1.PodStats) {
	ref := ps.PodRef
	var ephemeral, other []statsv1alpha1.VolumeStats
	if hoststats.SafeName(ref.UID) {
		vols := d.p.volumes.Get(types.UID(ref.UID), d.p.o.Clock.Now(), func() podVolumes { return d.measureVolumes(ctx, ref.UID) })
		for _, v := range vols.walked {
			if v.ephemeral {
				ephemeral = append(ephemeral, v.stats())
			} else {
				other = append(other, v.stats())
			}
		}
		// Persistent and CSI volumes: never ephemeral storage.
		for i := range vols.measured {
			other = append(other, cloneVolumeStats(&vols.measured[i]))
		}
	}
	if len(ephemeral)+len(other) > 0 {
		ps.VolumeStats = append(append(make([]statsv1alpha1.VolumeStats, 0, len(ephemeral)+len(other)), ephemeral...), other...)
	}

	es := fsStatsOf(d.nodeFs)
	for _, c := range ps.Containers {
		if c.Rootfs == nil {
			continue
		}
		es.Time = later(es.Time, c.Rootfs.Time)
		es.UsedBytes, es.InodesUsed = add(es.UsedBytes, c.Rootfs.UsedBytes), add(es.InodesUsed, c.Rootfs.InodesUsed)
		if c.Logs != nil {
			es.Time = later(es.Time, c.Logs.Time)
			es.UsedBytes, es.InodesUsed = add(es.UsedBytes, c.Logs.UsedBytes), add(es.InodesUsed, c.Logs.InodesUsed)
		}
	}
	for _, v := range ephemeral {
		es.Time = later(es.Time, v.Time)
		es.UsedBytes, es.InodesUsed = add(es.UsedBytes, v.UsedBytes), add(es.InodesUsed, v.InodesUsed)
	}
	if dir, ok := d.p.podLogDir(ref.Namespace, ref.Name, ref.UID); ok {
		if logs := d.files(ctx, dir); logs != nil {
			es.Time = later(es.Time, logs.Time)
			es.UsedBytes, es.InodesUsed = add(es.UsedBytes, logs.UsedBytes), add(es.InodesUsed, logs.InodesUsed)
		}
	}
	if hoststats.SafeName(ref.UID) {
		hosts := filepath.Join(d.p.o.RootDir, "pods", ref.UID, "etc-hosts")
		if _, err := os.Lstat(hosts); err == nil {
			if du, err := d.p.o.Host.DiskUsage(ctx, hosts); err == nil {
				addUsage(es, du)
			}
		}
	}
	ps.EphemeralStorage = es
}

// Volume plugins whose directories under a pod's volumes directory are
// measured, and whether their usage counts as the pod's ephemeral storage
// (upstream's IsLocalEphemeralVolume: emptyDir on disk, configMap,
// downwardAPI, gitRepo; a secret or a projected volume is in memory).
var volumePlugins = []struct {
	dir       string
	ephemeral bool
}{
	{emptyDirPlugin, true},
	{"kubernetes.io~configmap", true},
	{"kubernetes.io~downward-api", true},
	{"kubernetes.io~git-repo", true},
	{"kubernetes.io~secret", false},
	{"kubernetes.io~projected", false},
}

const emptyDirPlugin = "kubernetes.io~empty-dir"

// podVolumes is one measurement of a pod's volumes, kept for a period:
// those walked and those the VolumeMeasurer measured.
type podVolumes struct {
	walked   []volumeStats
	measured []statsv1alpha1.VolumeStats
}

// measureVolumes walks the pod's volume directories and asks the
// VolumeMeasurer for the others.
func (d *disk) measureVolumes(ctx context.Context, uid string) podVolumes {
	v := podVolumes{walked: d.walkVolumes(ctx, uid)}
	if d.p.o.Volumes != nil {
		v.measured = d.p.o.Volumes.MeasureVolumes(ctx, types.UID(uid))
	}
	return v
}

// cloneVolumeStats copies a kept measurement, so that no two summaries
// share a figure.
func cloneVolumeStats(v *statsv1alpha1.VolumeStats) statsv1alpha1.VolumeStats {
	out := *v
	if v.PVCRef != nil {
		ref := *v.PVCRef
		out.PVCRef = &ref
	}
	for _, p := range []**uint64{&out.AvailableBytes, &out.CapacityBytes, &out.UsedBytes, &out.Inodes, &out.InodesFree, &out.InodesUsed} {
		if *p != nil {
			c := **p
			*p = &c
		}
	}
	return out
}

// volumeStats is one measured volume, kept between walks.
type volumeStats struct {
	name      string
	ephemeral bool
	fs        FsInfo
	du        DiskUsage
}

func (v volumeStats) stats() statsv1alpha1.VolumeStats {
	st := fsStatsOf(&v.fs)
	st.Time = metav1.NewTime(v.du.Time)
	used, iu := v.du.Bytes, v.du.Inodes
	st.UsedBytes, st.InodesUsed = &used, &iu
	if st.Inodes == nil { // upstream reports every figure of a volume
		st.Inodes, st.InodesFree = new(uint64), new(uint64)
	}
	return statsv1alpha1.VolumeStats{Name: v.name, FsStats: *st}
}

// walkVolumes measures each volume of the pod: the size of the filesystem
// it is on and what it holds. An emptyDir on another filesystem than the
// node's is in memory (medium Memory) and not ephemeral storage.
func (d *disk) walkVolumes(ctx context.Context, uid string) []volumeStats {
	base := filepath.Join(d.p.o.RootDir, "pods", uid, "volumes")
	var out []volumeStats
	for _, plugin := range volumePlugins {
		entries, err := os.ReadDir(filepath.Join(base, plugin.dir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || !hoststats.SafeName(e.Name()) {
				continue
			}
			path := filepath.Join(base, plugin.dir, e.Name())
			info, err := d.p.o.Host.Filesystem(ctx, path)
			if err != nil {
				d.p.log.Debug("Failed to calculate volume metrics", "podUID", uid, "volumeName", e.Name(), "err", err)
				continue
			}
			du, err := d.p.o.Host.DiskUsage(ctx, path)
			if err != nil {
				continue
			}
			eph := plugin.ephemeral && (plugin.dir != emptyDirPlugin || info.Device == d.nodeFs.Device)
			out = append(out, volumeStats{name: e.Name(), ephemeral: eph, fs: *info, du: du})
		}
	}
	return out
}

// forgetVolumes drops the last walks of the pods not in live.
func (p *Provider) forgetVolumes(live map[string]bool) {
	p.volumes.Retain(func(uid types.UID) bool { return live[string(uid)] })
}
