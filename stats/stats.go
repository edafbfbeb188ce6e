package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// Runtime is the part of the CRI the provider reads: the sandboxes and
// containers (for their creation times and states), their stats, and the
// image filesystem. cri.RuntimeService plus cri.ImageService (a
// *cri.Client) and *fake.Runtime satisfy it.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Host measures the machine itself: what upstream kubelet asks cAdvisor
// for. NewLinuxHost reads a Linux node; a test passes a fake.
type Host interface {
	// Node measures the whole node: StartTime (when it booted), CPU (the
	// cumulative UsageCoreNanoSeconds at CPU.Time; UsageNanoCores may be
	// left nil, the Provider computes it from successive calls) and
	// Memory, with their PSI where the host has it, and unless
	// onlyCPUAndMemory, Network, Rlimit and IO (its PSI). NodeName, Fs,
	// Runtime and SystemContainers are the Provider's.
	Node(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.NodeStats, error)
	// Cgroup measures a system container: the StartTime, CPU and Memory
	// of the cgroup name (a path in the cgroup hierarchy, "/kubepods"),
	// and the PSI of its CPU, memory and I/O where the host has it.
	Cgroup(ctx context.Context, name string) (*statsv1alpha1.ContainerStats, error)
	// Filesystem measures the filesystem holding path.
	Filesystem(ctx context.Context, path string) (*FsInfo, error)
	// DiskUsage measures the bytes and inodes of path (a file, or a
	// directory and everything under it), as du does, without following
	// symbolic links or crossing filesystems. A missing path is zero.
	DiskUsage(ctx context.Context, path string) (DiskUsage, error)
}

// VolumeMeasurer measures the volumes of a pod that their volume plugins
// measure, as upstream's volume stat calculator asks the volume manager's
// mounters: *volume.Manager implements it (MeasureVolumes).
type VolumeMeasurer interface {
	// MeasureVolumes returns the stats of the pod's volumes it measures:
	// each with its name in the pod spec, its PVCRef for a claim's
	// volume, and every FsStats figure; none for a pod it does not know.
	// Volumes the provider walks itself (emptyDir, configMap,
	// downwardAPI, gitRepo, secret, projected) must not be among them.
	MeasureVolumes(ctx context.Context, uid types.UID) []statsv1alpha1.VolumeStats
}

// VolumeMeasurerFunc adapts a function to VolumeMeasurer.
type VolumeMeasurerFunc func(ctx context.Context, uid types.UID) []statsv1alpha1.VolumeStats

// MeasureVolumes calls f.
func (f VolumeMeasurerFunc) MeasureVolumes(ctx context.Context, uid types.UID) []statsv1alpha1.VolumeStats {
	return f(ctx, uid)
}

var _ VolumeMeasurer = VolumeMeasurerFunc(nil)

// FsInfo is a filesystem's size and identity.
type FsInfo struct {
	// Time is when it was measured.
	Time time.Time
	// Device identifies the filesystem: paths with the same Device are
	// on the same filesystem.
	Device uint64
	// CapacityBytes, AvailableBytes (free for unprivileged users) and
	// UsedBytes are its size.
	CapacityBytes, AvailableBytes, UsedBytes uint64
	// Inodes and InodesFree count its inodes; Inodes is zero when the
	// filesystem does not report them.
	Inodes, InodesFree uint64
}

// DiskUsage is what a file or a directory tree occupies.
type DiskUsage struct {
	// Time is when it was measured.
	Time time.Time
	// Bytes are the allocated bytes; Inodes the files and directories.
	Bytes, Inodes uint64
}

// Sentinel errors of New.
var (
	// ErrMissingRuntime: Options.Runtime is nil.
	ErrMissingRuntime = errors.New("stats: missing runtime")
	// ErrMissingNodeName: Options.NodeName is empty.
	ErrMissingNodeName = errors.New("stats: missing node name")
	// ErrMissingHost: Options.Host is nil on a system that has no default
	// Host (anything but Linux).
	ErrMissingHost = errors.New("stats: missing host")
	// ErrInvalidOptions: an option has a value the provider cannot use;
	// the error names the field.
	ErrInvalidOptions = errors.New("stats: invalid options")
)

// Defaults of Options.
const (
	// DefaultRootDir is the kubelet's root directory.
	DefaultRootDir = "/var/lib/kubelet"
	// DefaultPodLogsDir is where the pods' logs are.
	DefaultPodLogsDir = "/var/log/pods"
	// DefaultVolumeStatsPeriod is upstream's --volume-stats-agg-period.
	DefaultVolumeStatsPeriod = time.Minute
	// DefaultCPUSamplePeriod is the shortest window over which a CPU rate
	// is computed from cumulative usage: the kubelet's cAdvisor
	// housekeeping interval, and the eviction manager's period, which is
	// what drives upstream's CRI CPU cache.
	DefaultCPUSamplePeriod = 10 * time.Second
)

// Options configures New. Zero values are the documented defaults.
type Options struct {
	// NodeName is the node's name (NodeStats.NodeName). Required.
	NodeName string
	// Runtime gives the pods' and containers' usage and the image
	// filesystem. Required.
	Runtime Runtime
	// Host measures the node. nil means NewLinuxHost with its defaults on
	// Linux, and is ErrMissingHost elsewhere.
	Host Host
	// RootDir is the kubelet's root directory: the node filesystem (Fs) is
	// the one holding it (or its nearest existing parent), and the pods'
	// volumes are under RootDir/pods/<uid>/volumes. Default DefaultRootDir.
	RootDir string
	// PodLogsDir holds the pods' logs, <namespace>_<name>_<uid>/<container>/.
	// Default DefaultPodLogsDir.
	PodLogsDir string
	// PodsCgroup, KubeletCgroup, RuntimeCgroup and MiscCgroup are the
	// cgroups reported as the system containers "pods", "kubelet",
	// "runtime" and "misc" (upstream's pod cgroup root, --kubelet-cgroups,
	// --runtime-cgroups and --system-cgroups), as paths in the cgroup
	// hierarchy ("/kubepods.slice"). Empty leaves that system container
	// out.
	PodsCgroup, KubeletCgroup, RuntimeCgroup, MiscCgroup string
	// VolumeStatsPeriod is how often a pod's volumes are walked: when the
	// pod is first seen, then each time the period and a random jitter of
	// up to one more period have passed; in between the last walk is
	// reported, with its time. Zero means DefaultVolumeStatsPeriod;
	// negative walks them at every full Summary.
	VolumeStatsPeriod time.Duration
	// CPUSamplePeriod is the shortest interval between the two cumulative
	// samples a CPU rate (UsageNanoCores) is computed from, when the
	// runtime or the host gives none: a Summary sooner than that after
	// the last sample reports the last rate. Zero means
	// DefaultCPUSamplePeriod; negative computes a rate at every Summary.
	CPUSamplePeriod time.Duration
	// Volumes measures the pods' volumes that their volume plugins
	// measure themselves (persistent and CSI volumes; *volume.Manager
	// implements it), reported after the walked ones, once per
	// VolumeStatsPeriod as the walk. nil: only the walked volumes.
	Volumes VolumeMeasurer
	// Clock timestamps what the provider measures itself, and is the
	// clock of the default Host. Default the real clock.
	Clock clock.PassiveClock
	// Logger receives what could not be measured. nil discards.
	Logger *slog.Logger
}

// Provider builds the Summary API's view of the node and its pods
// (/stats/summary) as upstream kubelet's CRI stats provider does. It is
// safe for concurrent use and starts no goroutine. Make one with New.
type Provider struct {
	o       Options
	log     *slog.Logger
	started time.Time // the "kubelet" system container's start time
	cpu     *cpuRates
	volumes *hoststats.Periodic[podVolumes]
	sys     []systemContainer
}

type systemContainer struct{ name, cgroup string }

// New returns a Provider, or an error wrapping ErrMissingRuntime,
// ErrMissingNodeName, ErrMissingHost or ErrInvalidOptions.
func New(o Options) (*Provider, error) {
	if o.Runtime == nil {
		return nil, fmt.Errorf("new stats provider: %w", ErrMissingRuntime)
	}
	if o.NodeName == "" {
		return nil, fmt.Errorf("new stats provider: %w", ErrMissingNodeName)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Host == nil {
		h, err := defaultHost(o.Clock)
		if err != nil {
			return nil, fmt.Errorf("new stats provider: %w", err)
		}
		o.Host = h
	}
	if o.RootDir == "" {
		o.RootDir = DefaultRootDir
	}
	if o.PodLogsDir == "" {
		o.PodLogsDir = DefaultPodLogsDir
	}
	if o.VolumeStatsPeriod == 0 {
		o.VolumeStatsPeriod = DefaultVolumeStatsPeriod
	}
	if o.CPUSamplePeriod == 0 {
		o.CPUSamplePeriod = DefaultCPUSamplePeriod
	}
	p := &Provider{
		o:       o,
		log:     o.Logger,
		started: o.Clock.Now(),
		cpu:     newCPURates(o.CPUSamplePeriod),
		volumes: hoststats.NewPeriodic[podVolumes](o.VolumeStatsPeriod),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// In the order of their names, so that the summary is stable.
	for _, sc := range []struct{ field, name, cgroup string }{
		{"KubeletCgroup", statsv1alpha1.SystemContainerKubelet, o.KubeletCgroup},
		{"MiscCgroup", statsv1alpha1.SystemContainerMisc, o.MiscCgroup},
		{"PodsCgroup", statsv1alpha1.SystemContainerPods, o.PodsCgroup},
		{"RuntimeCgroup", statsv1alpha1.SystemContainerRuntime, o.RuntimeCgroup},
	} {
		if sc.cgroup == "" {
			continue
		}
		if !ValidCgroupName(sc.cgroup) {
			return nil, fmt.Errorf("new stats provider: %w: %s %q: not a path inside the cgroup hierarchy", ErrInvalidOptions, sc.field, sc.cgroup)
		}
		p.sys = append(p.sys, systemContainer{name: sc.name, cgroup: sc.cgroup})
	}
	return p, nil
}

// ValidCgroupName reports whether name is a path inside the cgroup
// hierarchy: absolute or relative, with no "." or ".." element.
func ValidCgroupName(name string) bool {
	return hoststats.SafeRelPath(strings.TrimPrefix(name, "/"))
}

// Summary measures the node and its pods now. With onlyCPUAndMemory it
// fills only what metrics-server needs (/stats/summary?only_cpu_and_memory=
// true): the node's start time, CPU and memory and its system containers',
// and the CPU and memory of the pods and their containers, without walking
// any filesystem. It fails when the node, the runtime's pods or (for a full
// summary) the image filesystem cannot be measured; a system container,
// log directory or volume that cannot be is left out and logged.
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	full := !onlyCPUAndMemory
	node, err := p.o.Host.Node(ctx, onlyCPUAndMemory)
	if err != nil {
		return nil, fmt.Errorf("get node stats: %w", err)
	}
	node.NodeName = p.o.NodeName
	p.cpu.fill(nodeKey, node.CPU)

	var d *disk
	if full {
		if d, err = p.newDisk(ctx); err != nil {
			return nil, err
		}
		node.Fs = d.nodeFsStats()
		switch node.Runtime, err = p.runtimeFs(ctx, d); {
		case errors.Is(err, cri.ErrUnimplemented):
			// As upstream's summary of a runtime without ImageFsInfo:
			// no runtime filesystems.
			p.log.Debug("The runtime does not report its image filesystem; the summary has none", "err", err)
		case err != nil:
			return nil, err
		}
	} else {
		node.Fs, node.Runtime, node.Network, node.Rlimit, node.IO = nil, nil, nil, nil, nil
	}

	pods, err := p.pods(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("list pod stats: %w", err)
	}
	node.SystemContainers = p.systemContainers(ctx, full)
	return &statsv1alpha1.Summary{Node: *node, Pods: pods}, nil
}

// systemContainers measures the configured system cgroups; one that cannot
// be measured is left out, as upstream does.
func (p *Provider) systemContainers(ctx context.Context, full bool) []statsv1alpha1.ContainerStats {
	var out []statsv1alpha1.ContainerStats
	for _, sc := range p.sys {
		cs, err := p.o.Host.Cgroup(ctx, sc.cgroup)
		if err != nil {
			p.log.Info("Failed to get system container stats", "containerName", sc.cgroup, "err", err)
			continue
		}
		cs.Name = sc.name
		if sc.name == statsv1alpha1.SystemContainerKubelet {
			cs.StartTime.Time = p.started
		}
		// System containers have no filesystem of their own; the
		// CPU-and-memory summary has no I/O figures.
		cs.Rootfs, cs.Logs = nil, nil
		if !full {
			cs.IO = nil
		}
		p.cpu.fill(systemKey+sc.name, cs.CPU)
		out = append(out, *cs)
	}
	return out
}
