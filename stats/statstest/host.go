package statstest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/stats"
)

// Cgroup is a system cgroup's scripted usage.
type Cgroup struct {
	// NanoCores is its CPU rate; its cumulative CPU time grows at this rate
	// from Start.
	NanoCores uint64
	// MemoryBytes is its working set and usage.
	MemoryBytes uint64
	// Start is when it was created.
	Start time.Time
}

// Method names a Host method in a Call.
type Method string

// The methods of Host.
const (
	MethodNode       Method = "Node"
	MethodCgroup     Method = "Cgroup"
	MethodFilesystem Method = "Filesystem"
	MethodDiskUsage  Method = "DiskUsage"
)

// Call is one call to a Host method: the cgroup name or the path it was
// given, if any.
type Call struct {
	Method Method
	Arg    string
}

// Host is a scripted stats.Host. Set its fields before the first call and
// leave them; it is then safe for concurrent use.
type Host struct {
	// Clock times the figures and the growth of cumulative CPU. nil means
	// the real clock.
	Clock clock.PassiveClock
	// BootTime is the node's StartTime; the node's cumulative CPU grows
	// from it.
	BootTime time.Time
	// NanoCores is the node's CPU rate.
	NanoCores uint64
	// MemoryCapacity and MemoryWorkingSet are the node's memory
	// (available = capacity - working set).
	MemoryCapacity, MemoryWorkingSet uint64
	// MaxPID and Processes are the node's task limit and count.
	MaxPID, Processes int64
	// Interfaces are the node's network interfaces; the one named eth0 is
	// the default.
	Interfaces []statsv1alpha1.InterfaceStats
	// Filesystems are the node's filesystems by mountpoint. A path is on
	// the one whose mountpoint is its longest prefix; a path under none
	// cannot be measured (an error, as statfs of a path that does not
	// exist).
	Filesystems map[string]stats.FsInfo
	// Cgroups are the system cgroups by name; measuring another is an
	// error.
	Cgroups map[string]Cgroup
	// NodeErr, when set, is the error of every Node call.
	NodeErr error

	mu    sync.Mutex
	calls []Call
}

var _ stats.Host = (*Host)(nil)

func (h *Host) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

func (h *Host) record(m Method, arg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, Call{Method: m, Arg: arg})
}

// Calls returns the calls made so far, in order.
func (h *Host) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.calls...)
}

// CallsOf returns how many calls of m were made.
func (h *Host) CallsOf(m Method) int {
	n := 0
	for _, c := range h.Calls() {
		if c.Method == m {
			n++
		}
	}
	return n
}

// cpuSince is rate nanocores busy from start to now, in nanoseconds of CPU.
func cpuSince(rate uint64, start, now time.Time) uint64 {
	d := now.Sub(start)
	if d <= 0 {
		return 0
	}
	return uint64(float64(rate) * d.Seconds())
}

// Node implements stats.Host.
func (h *Host) Node(_ context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.NodeStats, error) {
	h.record(MethodNode, "")
	if h.NodeErr != nil {
		return nil, h.NodeErr
	}
	now := h.now()
	t := metav1.NewTime(now)
	cpu := cpuSince(h.NanoCores, h.BootTime, now)
	ws, usage := h.MemoryWorkingSet, h.MemoryWorkingSet
	avail := uint64(0)
	if h.MemoryCapacity > ws {
		avail = h.MemoryCapacity - ws
	}
	ns := &statsv1alpha1.NodeStats{
		StartTime: metav1.NewTime(h.BootTime),
		CPU:       &statsv1alpha1.CPUStats{Time: t, UsageCoreNanoSeconds: &cpu},
		Memory:    &statsv1alpha1.MemoryStats{Time: t, AvailableBytes: &avail, UsageBytes: &usage, WorkingSetBytes: &ws},
	}
	if onlyCPUAndMemory {
		return ns, nil
	}
	if h.Interfaces != nil {
		ns.Network = &statsv1alpha1.NetworkStats{Time: t, Interfaces: append([]statsv1alpha1.InterfaceStats(nil), h.Interfaces...)}
		for _, i := range h.Interfaces {
			if i.Name == "eth0" {
				ns.Network.InterfaceStats = i
			}
		}
	}
	if h.MaxPID > 0 {
		maxPID, procs := h.MaxPID, h.Processes
		ns.Rlimit = &statsv1alpha1.RlimitStats{Time: t, MaxPID: &maxPID, NumOfRunningProcesses: &procs}
	}
	return ns, nil
}

// Cgroup implements stats.Host.
func (h *Host) Cgroup(_ context.Context, name string) (*statsv1alpha1.ContainerStats, error) {
	h.record(MethodCgroup, name)
	cg, ok := h.Cgroups[name]
	if !ok {
		return nil, fmt.Errorf("cgroup %s: %w", name, fs.ErrNotExist)
	}
	now := h.now()
	t := metav1.NewTime(now)
	cpu, mem := cpuSince(cg.NanoCores, cg.Start, now), cg.MemoryBytes
	usage := mem
	return &statsv1alpha1.ContainerStats{
		Name:      name,
		StartTime: metav1.NewTime(cg.Start),
		CPU:       &statsv1alpha1.CPUStats{Time: t, UsageCoreNanoSeconds: &cpu},
		Memory:    &statsv1alpha1.MemoryStats{Time: t, UsageBytes: &usage, WorkingSetBytes: &mem},
	}, nil
}

// Filesystem implements stats.Host: the filesystem whose mountpoint is the
// longest prefix of path, timed now.
func (h *Host) Filesystem(_ context.Context, path string) (*stats.FsInfo, error) {
	h.record(MethodFilesystem, path)
	best := ""
	found := false
	for mp := range h.Filesystems {
		if under(path, mp) && (!found || len(mp) > len(best)) {
			best, found = mp, true
		}
	}
	if !found {
		return nil, fmt.Errorf("statfs %s: %w", path, fs.ErrNotExist)
	}
	info := h.Filesystems[best]
	info.Time = h.now()
	return &info, nil
}

func under(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// DiskUsage implements stats.Host on the real directory tree: the sizes of
// the regular files and the number of entries (path itself included),
// without following symbolic links. A missing path is zero.
func (h *Host) DiskUsage(ctx context.Context, path string) (stats.DiskUsage, error) {
	h.record(MethodDiskUsage, path)
	if err := ctx.Err(); err != nil {
		return stats.DiskUsage{}, err
	}
	du := stats.DiskUsage{Time: h.now()}
	if _, err := os.Lstat(path); err != nil {
		return du, nil
	}
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		du.Inodes++
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				du.Bytes += uint64(fi.Size()) //nolint:gosec // a file size is not negative
			}
		}
		return nil
	})
	return du, nil
}
