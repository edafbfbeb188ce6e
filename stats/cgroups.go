package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// PodCgroupLister names the host's pod cgroups: *cgroups.Manager
// implements it.
type PodCgroupLister interface {
	// PodCgroups lists the pod cgroups that exist, by pod UID, each as
	// its path under the cgroup mount as the cgroup driver spells it
	// (/kubepods/burstable/pod<uid>, or
	// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice).
	PodCgroups() (map[types.UID]string, error)
}

// PodCgroupsFunc adapts a function to PodCgroupLister.
type PodCgroupsFunc func() (map[types.UID]string, error)

// PodCgroups calls f.
func (f PodCgroupsFunc) PodCgroups() (map[types.UID]string, error) { return f() }

var _ PodCgroupLister = PodCgroupsFunc(nil)

// CgroupStats is what one cgroup tells that the CRI stats do not: the
// figures of cAdvisor's that kube-prometheus reads. A figure that could
// not be read is nil (empty for IO).
type CgroupStats struct {
	// Time is when it was read.
	Time time.Time
	// CFS is its CPU bandwidth control counters; nil when it sets no CPU
	// quota (cAdvisor serves no CFS series then) or they cannot be read.
	CFS *CFSStats
	// MemoryCacheBytes is its page cache (v2 memory.stat's file, v1's
	// total_cache).
	MemoryCacheBytes *uint64
	// IO is its block I/O by device, sorted by major and minor.
	IO []DeviceIO
}

// CFSStats are a cgroup's CFS bandwidth control counters.
type CFSStats struct {
	// Periods are the enforcement periods that elapsed while it had
	// runnable tasks; ThrottledPeriods those in which it was throttled.
	Periods, ThrottledPeriods uint64
	// ThrottledTime is how long it was throttled in all.
	ThrottledTime time.Duration
}

// DeviceIO is a cgroup's block I/O on one device.
type DeviceIO struct {
	// Device is the device's name as cAdvisor labels it ("/dev/vda"),
	// empty when sysfs does not name it.
	Device string
	// Major and Minor number the device.
	Major, Minor uint64
	// Bytes and Ops are the bytes and the operations by cAdvisor's
	// operation names: "Read" and "Write", and on cgroup v1 also "Sync",
	// "Async", "Discard" and "Total"; nil where the cgroup's files said
	// nothing of the device.
	Bytes, Ops map[string]uint64
}

// InterfaceStats are one network interface's counters, as
// /proc/<pid>/net/dev gives them.
type InterfaceStats struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// PodNetworkStats are the interfaces of a pod's network namespace.
type PodNetworkStats struct {
	// Time is when they were read.
	Time time.Time
	// Interfaces are by name as the kernel lists them, without loopback,
	// veth ends and other engines' bridges (as cAdvisor leaves them out).
	Interfaces []InterfaceStats
}

// PodCgroupStats is what a pod's cgroups and network namespace tell.
type PodCgroupStats struct {
	// Cgroup is the pod cgroup's path, as PodCgroupLister gave it.
	Cgroup string
	// Pod is the pod cgroup's own figures (its containers' included).
	Pod CgroupStats
	// Containers are the figures of the containers whose cgroup was
	// found under the pod's, by container ID.
	Containers map[string]CgroupStats
	// Network is the pod's network namespace's, read through a process
	// of the pod; nil when none could be read.
	Network *PodNetworkStats
}

// CgroupReaderOptions configure NewCgroupReader.
type CgroupReaderOptions struct {
	// Pods names the pod cgroups; required.
	Pods PodCgroupLister
	// CgroupRoot is where the cgroup file system is mounted (the v2
	// unified hierarchy, or the directory of the v1 hierarchies); empty
	// means /sys/fs/cgroup.
	CgroupRoot string
	// ProcRoot is where procfs is mounted; empty means /proc.
	ProcRoot string
	// SysRoot is where sysfs is mounted, for the names of block devices;
	// empty means /sys.
	SysRoot string
	// Clock stamps the figures; nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives, at debug level, what could not be read; nil
	// discards it.
	Logger *slog.Logger
}

// ErrMissingPodCgroups: CgroupReaderOptions.Pods is nil.
var ErrMissingPodCgroups = errors.New("stats: missing pod cgroups")

// CgroupReader reads, for the pods the runtime measured, what cAdvisor
// reads of their cgroups and network namespaces and the CRI stats do not
// give: CFS throttling, page cache, block I/O by device, packets and
// drops by interface. It keeps nothing between calls and is safe for
// concurrent use. Only Linux has cgroups: elsewhere it reads nothing.
type CgroupReader struct {
	o   CgroupReaderOptions
	log *slog.Logger
}

// NewCgroupReader checks o and returns a CgroupReader; it touches
// nothing.
func NewCgroupReader(o CgroupReaderOptions) (*CgroupReader, error) {
	if o.Pods == nil {
		return nil, fmt.Errorf("new cgroup reader: %w", ErrMissingPodCgroups)
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &CgroupReader{o: o, log: log}, nil
}

// CgroupStats reads the cgroups of pods (those of a Usage) that
// PodCgroupLister lists: each pod's cgroup, its containers' (found among
// the pod cgroup's children by ID, ContainerCgroup) and its network
// namespace (through the first process found in the sandbox's cgroup,
// then the others'). A pod without a cgroup is left out, a file that
// cannot be read leaves its figure out: it never fails. It stops early,
// with what it read, when ctx ends.
func (r *CgroupReader) CgroupStats(ctx context.Context, pods []PodUsage) map[types.UID]*PodCgroupStats {
	if len(pods) == 0 {
		return nil
	}
	cgroups, err := r.o.Pods.PodCgroups()
	if err != nil {
		r.log.Debug("No pod cgroups to read", "err", err)
		return nil
	}
	out := map[types.UID]*PodCgroupStats{}
	for _, p := range pods {
		if ctx.Err() != nil {
			break
		}
		cg, ok := cgroups[types.UID(p.Ref.UID)]
		if !ok {
			continue
		}
		rel := strings.TrimPrefix(cg, "/")
		if rel == "" || !hoststats.SafeRelPath(rel) {
			r.log.Debug("Pod cgroup path refused", "pod", p.Ref.Namespace+"/"+p.Ref.Name, "cgroup", cg)
			continue
		}
		if s := r.readPod(cg, rel, p); s != nil {
			out[types.UID(p.Ref.UID)] = s
		}
	}
	return out
}

// ContainerCgroup finds, among the names of a pod cgroup's children, the
// cgroup of the container id as runtimes name it: the ID itself
// (containerd with cgroupfs), or a unit or directory ending in "-<id>"
// with or without ".scope" (containerd's cri-containerd-<id>.scope and
// CRI-O's crio-<id>.scope with systemd, CRI-O's crio-<id> with cgroupfs).
func ContainerCgroup(children []string, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for _, c := range children {
		base := strings.TrimSuffix(c, ".scope")
		if c == id || strings.HasSuffix(base, "-"+id) {
			return c, true
		}
	}
	return "", false
}

// procsOrder is the order in which the children of a pod cgroup are
// searched for a process in the pod's network namespace: the sandbox's
// first (its process lives as long as the pod), then the others, sorted.
func procsOrder(children []string, sandboxID string) []string {
	out := slices.Clone(children)
	slices.Sort(out)
	if c, ok := ContainerCgroup(out, sandboxID); ok {
		i := slices.Index(out, c)
		out = append(append([]string{c}, out[:i]...), out[i+1:]...)
	}
	return out
}
