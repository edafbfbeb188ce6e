//go:build linux

package stats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// ErrMissingRuntime is returned by NewLinux when LinuxOptions.Runtime is nil.
var ErrMissingRuntime = errors.New("stats: missing runtime")

// RuntimeStats is the part of the CRI the Linux provider uses;
// cri.RuntimeService plus cri.ImageService (a *cri.Client) and the cri/fake
// runtime satisfy it.
type RuntimeStats interface {
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// LinuxOptions configures NewLinux. Zero values are the documented defaults.
type LinuxOptions struct {
	// Runtime gives pod and container usage and the image filesystem.
	// Required.
	Runtime RuntimeStats
	// ProcRoot is where procfs is mounted. Default "/proc".
	ProcRoot string
	// CgroupRoot is where the cgroup hierarchy is mounted: the v2 unified
	// hierarchy, or the v1 directory holding the "memory" controller.
	// Default "/sys/fs/cgroup".
	CgroupRoot string
	// RootDir is the kubelet's root directory: nodefs is its filesystem
	// and emptyDir volumes live in RootDir/pods/<uid>/volumes/
	// kubernetes.io~empty-dir/<name>. Default "/var/lib/kubelet"; when it
	// does not exist, nodefs is the filesystem of its nearest existing
	// parent.
	RootDir string
	// PodLogsDir holds the pods' logs, <namespace>_<name>_<uid>/<container>.
	// Default "/var/log/pods".
	PodLogsDir string
	// PodsCgroup is the cgroup that holds every pod, relative to the
	// memory hierarchy ("kubepods.slice" with systemd and v2, "kubepods"
	// with cgroupfs). With AllocatableMemoryBytes it gives the
	// allocatableMemory.available signal; empty means not measured.
	PodsCgroup string
	// AllocatableMemoryBytes is the node's allocatable memory (capacity
	// minus reserved). Zero means allocatableMemory.available is not
	// measured.
	AllocatableMemoryBytes uint64
	// VolumeStatsPeriod is how often a pod's emptyDir volumes are walked,
	// as upstream's --volume-stats-agg-period: when the pod is first
	// seen, then each time the period and a random jitter of up to one
	// more period have passed (upstream's jitter factor, 1.0). Between
	// walks Get reports the last measurement, with its time. Zero means
	// 1m; negative means at every Get.
	VolumeStatsPeriod time.Duration
	// Clock timestamps the measurements. Default the real clock.
	Clock clock.PassiveClock
}

// DefaultVolumeStatsPeriod is upstream's --volume-stats-agg-period.
const DefaultVolumeStatsPeriod = time.Minute

// Linux measures a Linux node and its pods. Build it with NewLinux.
type Linux struct {
	o       LinuxOptions
	host    hoststats.Host
	volumes *hoststats.Periodic[[]VolumeStats] // each pod's last emptyDir walk
}

var _ Provider = (*Linux)(nil)

// NewLinux returns a Linux provider, or an error wrapping ErrMissingRuntime.
func NewLinux(o LinuxOptions) (*Linux, error) {
	if o.Runtime == nil {
		return nil, fmt.Errorf("new linux stats provider: %w", ErrMissingRuntime)
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.RootDir == "" {
		o.RootDir = "/var/lib/kubelet"
	}
	if o.PodLogsDir == "" {
		o.PodLogsDir = "/var/log/pods"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.VolumeStatsPeriod == 0 {
		o.VolumeStatsPeriod = DefaultVolumeStatsPeriod
	}
	return &Linux{
		o:       o,
		host:    hoststats.Host{ProcRoot: o.ProcRoot, CgroupRoot: o.CgroupRoot},
		volumes: hoststats.NewPeriodic[[]VolumeStats](o.VolumeStatsPeriod),
	}, nil
}

// Get measures the node and its pods. A failing node measurement (memory,
// filesystems, PIDs) is an error; a pod whose logs or volumes cannot be
// read gets no figure for them.
func (l *Linux) Get(ctx context.Context) (*Summary, error) {
	now := l.o.Clock.Now()
	s := &Summary{}
	mem, err := l.nodeMemory(now)
	if err != nil {
		return nil, fmt.Errorf("get stats: %w", err)
	}
	s.Node.Memory = mem
	if l.o.PodsCgroup != "" && l.o.AllocatableMemoryBytes > 0 {
		am, err := l.podsMemory(now)
		if err != nil {
			return nil, fmt.Errorf("get stats: %w", err)
		}
		s.Node.AllocatableMemory = am
	}
	nodeFsPath := hoststats.ExistingParent(l.o.RootDir)
	if s.Node.Fs, err = statfs(nodeFsPath, now); err != nil {
		return nil, fmt.Errorf("get stats: nodefs: %w", err)
	}
	if s.Node.Rlimit, err = l.rlimit(now); err != nil {
		return nil, fmt.Errorf("get stats: %w", err)
	}
	info, err := l.o.Runtime.ImageFsInfo(ctx)
	switch {
	case errors.Is(err, cri.ErrUnimplemented):
		// A runtime that does not report its image filesystem keeps its
		// images on nodefs, as far as eviction can tell.
		info = &runtimeapi.ImageFsInfoResponse{}
	case err != nil:
		return nil, fmt.Errorf("get stats: image fs info: %w", err)
	}
	s.Node.ImageFs, s.Node.DedicatedImageFs = l.runtimeFs(info.GetImageFilesystems(), nodeFsPath, s.Node.Fs, now)
	if cfs := info.GetContainerFilesystems(); cri.SplitContainerFs(info) {
		s.Node.ContainerFs, _ = l.runtimeFs(cfs, nodeFsPath, s.Node.Fs, now)
		s.Node.SplitContainerFs = true
	}
	if s.Pods, s.Incomplete, err = l.pods(ctx, now); err != nil {
		return nil, fmt.Errorf("get stats: %w", err)
	}
	return s, nil
}

func (l *Linux) nodeMemory(now time.Time) (*MemoryStats, error) {
	mi, err := l.host.Meminfo()
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	m, err := l.host.CgroupMemory("", mi)
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	ws := hoststats.WorkingSet(m.Usage, m.InactiveFile)
	avail := uint64(0)
	if mi.Total > ws {
		avail = mi.Total - ws
	}
	return &MemoryStats{Time: now, AvailableBytes: avail, WorkingSetBytes: ws}, nil
}

func (l *Linux) podsMemory(now time.Time) (*MemoryStats, error) {
	if !hoststats.SafeRelPath(l.o.PodsCgroup) {
		return nil, fmt.Errorf("pods cgroup %q: not a relative path inside the hierarchy", l.o.PodsCgroup)
	}
	m, err := l.host.CgroupMemory(l.o.PodsCgroup, hoststats.Meminfo{})
	if err != nil {
		return nil, fmt.Errorf("pods cgroup memory: %w", err)
	}
	ws := hoststats.WorkingSet(m.Usage, m.InactiveFile)
	avail := uint64(0)
	if l.o.AllocatableMemoryBytes > ws {
		avail = l.o.AllocatableMemoryBytes - ws
	}
	return &MemoryStats{Time: now, AvailableBytes: avail, WorkingSetBytes: ws}, nil
}

func (l *Linux) rlimit(now time.Time) (*RlimitStats, error) {
	maxPID, n, err := l.host.PIDs()
	if err != nil {
		return nil, err
	}
	return &RlimitStats{Time: now, MaxPID: maxPID, NumOfRunningProcesses: n}, nil
}

// runtimeFs measures the first of the runtime's image (or container)
// filesystems: used bytes and inodes as the runtime reports them, capacity
// and free space from statfs of its mountpoint. A mountpoint this process
// cannot see (a runtime in another mount namespace, or the fake runtime) is
// taken to be on nodefs. It reports whether the filesystem is another
// device than nodefs.
func (l *Linux) runtimeFs(fss []*runtimeapi.FilesystemUsage, nodeFsPath string, nodeFs *FsStats, now time.Time) (*FsStats, bool) {
	if len(fss) == 0 {
		c := *nodeFs
		return &c, false
	}
	use := fss[0]
	st, err := statfs(use.GetFsId().GetMountpoint(), now)
	dedicated := false
	if err != nil {
		c := *nodeFs
		st = &c
	} else {
		dedicated = !hoststats.SameDevice(use.GetFsId().GetMountpoint(), nodeFsPath)
	}
	st.UsedBytes = use.GetUsedBytes().GetValue()
	st.InodesUsed = use.GetInodesUsed().GetValue()
	return st, dedicated
}

// pods measures the pods from their sandboxes' and containers' stats and
// their directories. The sandbox stats are optional: containerd fails the
// whole list when a single sandbox has no metrics (one being stopped or
// started), and losing every pod's figures to that would stop eviction
// altogether; without them a pod's memory is its containers' sum and its
// process count is not measured, and incomplete says so.
func (l *Linux) pods(ctx context.Context, now time.Time) (out []PodStats, incomplete, err error) {
	sandboxes, err := l.o.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		sandboxes, incomplete = nil, fmt.Errorf("list pod sandbox stats (pods measured from their containers): %w", err)
	}
	containers, err := l.o.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	switch {
	case errors.Is(err, cri.ErrUnimplemented):
		// A runtime that measures nothing: no pod's usage, which
		// incomplete says, and the node's signals alone.
		return nil, fmt.Errorf("list container stats (no pod measured): %w", err), nil
	case err != nil:
		return nil, nil, fmt.Errorf("list container stats: %w", err)
	}
	byUID := map[types.UID]int{}
	pod := func(uid types.UID, name, ns string) *PodStats {
		if i, ok := byUID[uid]; ok {
			return &out[i]
		}
		byUID[uid] = len(out)
		out = append(out, PodStats{UID: uid, Name: name, Namespace: ns})
		return &out[len(out)-1]
	}
	for _, sb := range sandboxes {
		md := sb.GetAttributes().GetMetadata()
		if md.GetUid() == "" {
			continue
		}
		p := pod(types.UID(md.GetUid()), md.GetName(), md.GetNamespace())
		lin := sb.GetLinux()
		if m := lin.GetMemory(); m != nil && m.GetWorkingSetBytes() != nil {
			p.Memory = &MemoryStats{Time: tsOr(m.GetTimestamp(), now), WorkingSetBytes: m.GetWorkingSetBytes().GetValue()}
		}
		if pc := lin.GetProcess(); pc != nil && pc.GetProcessCount() != nil {
			n := pc.GetProcessCount().GetValue()
			p.ProcessCount = &n
		}
	}
	for _, c := range containers {
		labels := c.GetAttributes().GetLabels()
		uid := types.UID(labels[cri.PodUIDLabel])
		if uid == "" {
			continue
		}
		p := pod(uid, labels[cri.PodNameLabel], labels[cri.PodNamespaceLabel])
		name := c.GetAttributes().GetMetadata().GetName()
		if name == "" {
			name = labels[cri.ContainerNameLabel]
		}
		cs := ContainerStats{Name: name}
		if m := c.GetMemory(); m != nil && m.GetWorkingSetBytes() != nil {
			cs.Memory = &MemoryStats{Time: tsOr(m.GetTimestamp(), now), WorkingSetBytes: m.GetWorkingSetBytes().GetValue()}
		}
		if w := c.GetWritableLayer(); w != nil {
			cs.Rootfs = &FsStats{Time: tsOr(w.GetTimestamp(), now), UsedBytes: w.GetUsedBytes().GetValue(), InodesUsed: w.GetInodesUsed().GetValue()}
		}
		p.Containers = append(p.Containers, cs)
	}
	for i := range out {
		p := &out[i]
		if p.Memory == nil && len(p.Containers) > 0 {
			var sum uint64
			for _, c := range p.Containers {
				if c.Memory != nil {
					sum += c.Memory.WorkingSetBytes
				}
			}
			p.Memory = &MemoryStats{Time: now, WorkingSetBytes: sum}
		}
		l.podDisk(p, now)
	}
	l.forgetVolumes(out)
	return out, incomplete, nil
}

// podDisk fills in the logs of p's containers and p's emptyDir volumes.
// Names that could leave the directories (a "/" or "..") are skipped.
func (l *Linux) podDisk(p *PodStats, now time.Time) {
	if !hoststats.SafeName(string(p.UID)) {
		return
	}
	if hoststats.SafeName(p.Namespace) && hoststats.SafeName(p.Name) {
		logDir := filepath.Join(l.o.PodLogsDir, p.Namespace+"_"+p.Name+"_"+string(p.UID))
		for i := range p.Containers {
			if hoststats.SafeName(p.Containers[i].Name) {
				p.Containers[i].Logs = du(filepath.Join(logDir, p.Containers[i].Name), now)
			}
		}
	}
	p.Volumes = l.volumeStats(p.UID, now)
}

// volumeStats returns the pod's emptyDir usage: measured now when it is
// due (VolumeStatsPeriod), else the last measurement.
func (l *Linux) volumeStats(uid types.UID, now time.Time) []VolumeStats {
	return slices.Clone(l.volumes.Get(uid, now, func() []VolumeStats {
		volDir := filepath.Join(l.o.RootDir, "pods", string(uid), "volumes", "kubernetes.io~empty-dir")
		var out []VolumeStats
		if entries, err := os.ReadDir(volDir); err == nil {
			for _, e := range entries {
				if !e.IsDir() || !hoststats.SafeName(e.Name()) {
					continue
				}
				out = append(out, VolumeStats{Name: e.Name(), FsStats: *du(filepath.Join(volDir, e.Name()), now)})
			}
		}
		return out
	}))
}

// forgetVolumes drops the measurements of pods that are gone.
func (l *Linux) forgetVolumes(pods []PodStats) {
	live := make(map[types.UID]struct{}, len(pods))
	for i := range pods {
		live[pods[i].UID] = struct{}{}
	}
	l.volumes.Retain(func(uid types.UID) bool { _, ok := live[uid]; return ok })
}

// du measures the bytes (allocated blocks) and inodes under dir (see
// hoststats.DiskUsage). A missing directory is zero usage.
func du(dir string, now time.Time) *FsStats {
	b, n := hoststats.DiskUsage(dir)
	return &FsStats{Time: now, UsedBytes: b, InodesUsed: n}
}

func statfs(path string, now time.Time) (*FsStats, error) {
	fs, err := hoststats.Statfs(path)
	if err != nil {
		return nil, err
	}
	return &FsStats{
		Time: now, CapacityBytes: fs.CapacityBytes, AvailableBytes: fs.AvailableBytes, UsedBytes: fs.UsedBytes,
		Inodes: fs.Inodes, InodesFree: fs.InodesFree, InodesUsed: fs.InodesUsed,
	}, nil
}

func tsOr(ns int64, now time.Time) time.Time {
	if ns == 0 {
		return now
	}
	return time.Unix(0, ns)
}
