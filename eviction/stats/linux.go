//go:build linux

package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
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
	o LinuxOptions

	mu      sync.Mutex
	volumes map[types.UID]podVolumes // each pod's last emptyDir walk
}

// podVolumes is a pod's last emptyDir measurement and when it is due
// again.
type podVolumes struct {
	stats []VolumeStats
	next  time.Time
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
	return &Linux{o: o, volumes: map[types.UID]podVolumes{}}, nil
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
	nodeFsPath := existingParent(l.o.RootDir)
	if s.Node.Fs, err = statfs(nodeFsPath, now); err != nil {
		return nil, fmt.Errorf("get stats: nodefs: %w", err)
	}
	if s.Node.Rlimit, err = l.rlimit(now); err != nil {
		return nil, fmt.Errorf("get stats: %w", err)
	}
	info, err := l.o.Runtime.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("get stats: image fs info: %w", err)
	}
	s.Node.ImageFs, s.Node.DedicatedImageFs = l.imageFs(info, nodeFsPath, s.Node.Fs, now)
	if s.Pods, s.Incomplete, err = l.pods(ctx, now); err != nil {
		return nil, fmt.Errorf("get stats: %w", err)
	}
	return s, nil
}

func (l *Linux) cgroupV2() bool {
	_, err := os.Stat(filepath.Join(l.o.CgroupRoot, "cgroup.controllers"))
	return err == nil
}

func (l *Linux) nodeMemory(now time.Time) (*MemoryStats, error) {
	data, err := os.ReadFile(filepath.Join(l.o.ProcRoot, "meminfo"))
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	mi, err := parseMeminfo(data)
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	usage, inactive, err := l.cgroupMemory("", mi)
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	ws := workingSet(usage, inactive)
	avail := uint64(0)
	if mi.total > ws {
		avail = mi.total - ws
	}
	return &MemoryStats{Time: now, AvailableBytes: avail, WorkingSetBytes: ws}, nil
}

func (l *Linux) podsMemory(now time.Time) (*MemoryStats, error) {
	if !safeRelPath(l.o.PodsCgroup) {
		return nil, fmt.Errorf("pods cgroup %q: not a relative path inside the hierarchy", l.o.PodsCgroup)
	}
	usage, inactive, err := l.cgroupMemory(l.o.PodsCgroup, meminfo{})
	if err != nil {
		return nil, fmt.Errorf("pods cgroup memory: %w", err)
	}
	ws := workingSet(usage, inactive)
	avail := uint64(0)
	if l.o.AllocatableMemoryBytes > ws {
		avail = l.o.AllocatableMemoryBytes - ws
	}
	return &MemoryStats{Time: now, AvailableBytes: avail, WorkingSetBytes: ws}, nil
}

// cgroupMemory returns the usage and inactive file bytes of the memory cgroup
// rel ("" = the root). At the v2 root, which has no memory.current, usage is
// MemTotal-MemFree from mi and the inactive file pages come from memory.stat
// or, without it, from mi. On v1 without a memory controller, the root's
// figures come from mi alone.
func (l *Linux) cgroupMemory(rel string, mi meminfo) (usage, inactive uint64, err error) {
	if l.cgroupV2() {
		dir := filepath.Join(l.o.CgroupRoot, rel)
		stat, statErr := readKeyValues(filepath.Join(dir, "memory.stat"))
		data, curErr := os.ReadFile(filepath.Join(dir, "memory.current"))
		switch {
		case curErr == nil:
			if usage, err = parseUint(data); err != nil {
				return 0, 0, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.current"), err)
			}
		case rel == "":
			usage = mi.total - mi.free
		default:
			return 0, 0, curErr
		}
		switch {
		case statErr == nil:
			inactive = stat["inactive_file"]
		case rel == "" && mi.hasInactiveFile:
			inactive = mi.inactiveFile
		case rel != "":
			return 0, 0, statErr
		}
		return usage, inactive, nil
	}
	dir := filepath.Join(l.o.CgroupRoot, "memory", rel)
	data, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil && rel == "" && errors.Is(err, fs.ErrNotExist) {
		// No memory controller mounted: /proc/meminfo alone.
		return mi.total - mi.free, mi.inactiveFile, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if usage, err = parseUint(data); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.usage_in_bytes"), err)
	}
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, 0, err
	}
	return usage, stat["total_inactive_file"], nil
}

func readKeyValues(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kv, err := parseKeyValues(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kv, nil
}

func (l *Linux) rlimit(now time.Time) (*RlimitStats, error) {
	data, err := os.ReadFile(filepath.Join(l.o.ProcRoot, "sys/kernel/pid_max"))
	if err != nil {
		return nil, fmt.Errorf("pid limit: %w", err)
	}
	maxPID, err := parseUint(data)
	if err != nil {
		return nil, fmt.Errorf("pid limit: pid_max: %w", err)
	}
	if data, err := os.ReadFile(filepath.Join(l.o.ProcRoot, "sys/kernel/threads-max")); err == nil {
		if tm, err := parseUint(data); err == nil && tm < maxPID {
			maxPID = tm
		}
	}
	data, err = os.ReadFile(filepath.Join(l.o.ProcRoot, "loadavg"))
	if err != nil {
		return nil, fmt.Errorf("pid count: %w", err)
	}
	n, err := parseLoadavgThreads(data)
	if err != nil {
		return nil, fmt.Errorf("pid count: %w", err)
	}
	return &RlimitStats{Time: now, MaxPID: maxPID, NumOfRunningProcesses: n}, nil
}

// imageFs measures the runtime's image filesystem: used bytes and inodes as
// the runtime reports them, capacity and free space from statfs of its
// mountpoint. A mountpoint this process cannot see (a runtime in another
// mount namespace, or the fake runtime) is taken to be on nodefs.
func (l *Linux) imageFs(info *runtimeapi.ImageFsInfoResponse, nodeFsPath string, nodeFs *FsStats, now time.Time) (*FsStats, bool) {
	fss := info.GetImageFilesystems()
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
		dedicated = !sameDevice(use.GetFsId().GetMountpoint(), nodeFsPath)
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
	if err != nil {
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
	if !safeName(string(p.UID)) {
		return
	}
	if safeName(p.Namespace) && safeName(p.Name) {
		logDir := filepath.Join(l.o.PodLogsDir, p.Namespace+"_"+p.Name+"_"+string(p.UID))
		for i := range p.Containers {
			if safeName(p.Containers[i].Name) {
				p.Containers[i].Logs = du(filepath.Join(logDir, p.Containers[i].Name), now)
			}
		}
	}
	p.Volumes = l.volumeStats(p.UID, now)
}

// volumeStats returns the pod's emptyDir usage: measured now when it is
// due (VolumeStatsPeriod), else the last measurement.
func (l *Linux) volumeStats(uid types.UID, now time.Time) []VolumeStats {
	period := l.o.VolumeStatsPeriod
	if period > 0 {
		l.mu.Lock()
		c, ok := l.volumes[uid]
		l.mu.Unlock()
		if ok && now.Before(c.next) {
			return slices.Clone(c.stats)
		}
	}
	volDir := filepath.Join(l.o.RootDir, "pods", string(uid), "volumes", "kubernetes.io~empty-dir")
	var out []VolumeStats
	if entries, err := os.ReadDir(volDir); err == nil {
		for _, e := range entries {
			if !e.IsDir() || !safeName(e.Name()) {
				continue
			}
			out = append(out, VolumeStats{Name: e.Name(), FsStats: *du(filepath.Join(volDir, e.Name()), now)})
		}
	}
	if period > 0 {
		next := now.Add(period + time.Duration(rand.Int64N(int64(period))))
		l.mu.Lock()
		l.volumes[uid] = podVolumes{stats: out, next: next}
		l.mu.Unlock()
	}
	return slices.Clone(out)
}

// forgetVolumes drops the measurements of pods that are gone.
func (l *Linux) forgetVolumes(pods []PodStats) {
	live := make(map[types.UID]struct{}, len(pods))
	for i := range pods {
		live[pods[i].UID] = struct{}{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid := range l.volumes {
		if _, ok := live[uid]; !ok {
			delete(l.volumes, uid)
		}
	}
}

// du measures the bytes (allocated blocks) and inodes under dir without
// following symbolic links or crossing into other filesystems. A missing
// directory is zero usage.
func du(dir string, now time.Time) *FsStats {
	st := &FsStats{Time: now}
	var dev uint64
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return st
	} else if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev = uint64(sys.Dev)
	}
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are not counted
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		sys, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if uint64(sys.Dev) != dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		key := [2]uint64{uint64(sys.Dev), sys.Ino}
		if seen[key] {
			return nil
		}
		seen[key] = true
		st.UsedBytes += uint64(sys.Blocks) * 512
		st.InodesUsed++
		return nil
	})
	return st
}

func statfs(path string, now time.Time) (*FsStats, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(s.Bsize)
	st := &FsStats{
		Time:           now,
		CapacityBytes:  s.Blocks * bs,
		AvailableBytes: s.Bavail * bs,
		UsedBytes:      (s.Blocks - s.Bfree) * bs,
		Inodes:         s.Files,
		InodesFree:     s.Ffree,
	}
	if s.Files >= s.Ffree {
		st.InodesUsed = s.Files - s.Ffree
	}
	return st, nil
}

func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return true
	}
	return sa.Dev == sb.Dev
}

// existingParent returns path or its nearest ancestor that exists.
func existingParent(path string) string {
	p := filepath.Clean(path)
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

func tsOr(ns int64, now time.Time) time.Time {
	if ns == 0 {
		return now
	}
	return time.Unix(0, ns)
}
