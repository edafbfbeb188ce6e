//go:build linux

package stats

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// LinuxHostOptions configures NewLinuxHost. Zero values are the defaults.
type LinuxHostOptions struct {
	// ProcRoot is where procfs is mounted. Default "/proc".
	ProcRoot string
	// CgroupRoot is where the cgroup hierarchy is mounted: the v2 unified
	// hierarchy, or the v1 directory holding one directory per controller.
	// Default "/sys/fs/cgroup".
	CgroupRoot string
	// Clock timestamps the measurements. Default the real clock.
	Clock clock.PassiveClock
}

// LinuxHost measures a Linux node from procfs, the cgroup hierarchy and
// statfs(2), as cAdvisor's root container does for upstream kubelet.
type LinuxHost struct {
	h     hoststats.Host
	clock clock.PassiveClock
}

var _ Host = (*LinuxHost)(nil)

// NewLinuxHost returns a LinuxHost.
func NewLinuxHost(o LinuxHostOptions) *LinuxHost {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &LinuxHost{h: hoststats.Host{ProcRoot: o.ProcRoot, CgroupRoot: o.CgroupRoot}, clock: o.Clock}
}

func defaultHost(clk clock.PassiveClock) (Host, error) {
	return NewLinuxHost(LinuxHostOptions{Clock: clk}), nil
}

// Node measures the node: StartTime is the boot time (/proc/stat btime);
// CPU the root cgroup's usage (v2 cpu.stat, v1 cpuacct.usage, or the busy
// time of /proc/stat); Memory the root cgroup's, with AvailableBytes
// MemTotal minus the working set (as eviction's memory.available); Network
// the interfaces of the host's network namespace except loopback, veth
// pairs and other engines' bridges, eth0 as the default one (cAdvisor's);
// Rlimit the task limit and count; the pressure stall information of CPU,
// memory and (in a full summary) I/O from /proc/pressure (KubeletPSI). A
// network, PID or pressure figure that cannot be read is left out (a
// kernel without PSI reports none, and no error); CPU and memory are
// required.
func (l *LinuxHost) Node(_ context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.NodeStats, error) {
	now := metav1.NewTime(l.clock.Now())
	ns := &statsv1alpha1.NodeStats{}
	if ps, err := l.h.ProcStat(); err == nil {
		ns.StartTime = metav1.NewTime(ps.BootTime)
	}
	cpu, err := l.h.CgroupCPU("")
	if err != nil {
		return nil, fmt.Errorf("node cpu: %w", err)
	}
	ns.CPU = &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &cpu}
	mi, err := l.h.Meminfo()
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	m, err := l.h.CgroupMemory("", mi)
	if err != nil {
		return nil, fmt.Errorf("node memory: %w", err)
	}
	ns.Memory = memoryStats(now, m)
	ws := *ns.Memory.WorkingSetBytes
	avail := uint64(0)
	if mi.Total > ws {
		avail = mi.Total - ws
	}
	ns.Memory.AvailableBytes = &avail
	ns.CPU.PSI, ns.Memory.PSI = l.nodePressure("cpu"), l.nodePressure("memory")
	if onlyCPUAndMemory {
		return ns, nil
	}
	if io := l.nodePressure("io"); io != nil {
		ns.IO = &statsv1alpha1.IOStats{Time: now, PSI: io}
	}
	if ifs, err := l.h.NetDev(); err == nil {
		ns.Network = &statsv1alpha1.NetworkStats{Time: now, Interfaces: make([]statsv1alpha1.InterfaceStats, 0, len(ifs))}
		for _, i := range ifs {
			is := statsv1alpha1.InterfaceStats{Name: i.Name, RxBytes: &i.RxBytes, RxErrors: &i.RxErrors, TxBytes: &i.TxBytes, TxErrors: &i.TxErrors}
			if i.Name == defaultInterface {
				ns.Network.InterfaceStats = is
			}
			ns.Network.Interfaces = append(ns.Network.Interfaces, is)
		}
	}
	if maxPID, n, err := l.h.PIDs(); err == nil {
		mp, np := int64(maxPID), int64(n) //nolint:gosec // kernel limits are far below MaxInt64
		ns.Rlimit = &statsv1alpha1.RlimitStats{Time: now, MaxPID: &mp, NumOfRunningProcesses: &np}
	}
	return ns, nil
}

// defaultInterface is the interface cAdvisor, and so upstream, reports as
// the default one of a network's stats.
const defaultInterface = "eth0"

func memoryStats(now metav1.Time, m hoststats.Memory) *statsv1alpha1.MemoryStats {
	usage, ws := m.Usage, hoststats.WorkingSet(m.Usage, m.InactiveFile)
	st := &statsv1alpha1.MemoryStats{Time: now, UsageBytes: &usage, WorkingSetBytes: &ws}
	if m.HasStat {
		rss, pf, mpf := m.RSS, m.PageFaults, m.MajorPageFaults
		st.RSSBytes, st.PageFaults, st.MajorPageFaults = &rss, &pf, &mpf
	}
	return st
}

// Cgroup measures the CPU and memory of a cgroup, as upstream reports a
// system container: AvailableBytes is its memory limit minus its working
// set when it has a limit; StartTime is when the cgroup was created as
// cAdvisor estimates it; on cgroup v2, the pressure stall information of
// its CPU, memory and I/O (cpu.pressure, memory.pressure, io.pressure),
// each left out when it cannot be read.
func (l *LinuxHost) Cgroup(_ context.Context, name string) (*statsv1alpha1.ContainerStats, error) {
	rel := strings.TrimPrefix(name, "/")
	if !hoststats.SafeRelPath(rel) {
		return nil, fmt.Errorf("cgroup %q: not a path inside the hierarchy", name)
	}
	now := metav1.NewTime(l.clock.Now())
	cpu, err := l.h.CgroupCPU(rel)
	if err != nil {
		return nil, fmt.Errorf("cgroup %s cpu: %w", name, err)
	}
	m, err := l.h.CgroupMemory(rel, hoststats.Meminfo{})
	if err != nil {
		return nil, fmt.Errorf("cgroup %s memory: %w", name, err)
	}
	cs := &statsv1alpha1.ContainerStats{
		Name:   name,
		CPU:    &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &cpu},
		Memory: memoryStats(now, m),
	}
	if limit, ok := l.h.CgroupMemoryLimit(rel); ok {
		avail := uint64(0)
		if ws := *cs.Memory.WorkingSetBytes; limit > ws {
			avail = limit - ws
		}
		cs.Memory.AvailableBytes = &avail
	}
	if ps, err := l.h.ProcStat(); err == nil {
		cs.StartTime = metav1.NewTime(l.h.CgroupStartTime(rel, ps.BootTime))
	}
	cs.CPU.PSI, cs.Memory.PSI = l.cgroupPressure(rel, "cpu"), l.cgroupPressure(rel, "memory")
	if io := l.cgroupPressure(rel, "io"); io != nil {
		cs.IO = &statsv1alpha1.IOStats{Time: now, PSI: io}
	}
	return cs, nil
}

// nodePressure is the node's pressure stall information of resource
// (/proc/pressure/<resource>), nil when the kernel gives none (no PSI,
// psi=0) or the file cannot be read or parsed.
func (l *LinuxHost) nodePressure(resource string) *statsv1alpha1.PSIStats {
	p, err := l.h.ProcPressure(resource)
	if err != nil {
		return nil
	}
	return psiStats(p)
}

// cgroupPressure is a cgroup's pressure stall information of resource
// (its cgroup v2 <resource>.pressure), nil on cgroup v1 or when the file
// cannot be read or parsed.
func (l *LinuxHost) cgroupPressure(rel, resource string) *statsv1alpha1.PSIStats {
	p, err := l.h.CgroupPressure(rel, resource)
	if err != nil {
		return nil
	}
	return psiStats(p)
}

// psiStats converts the kernel's figures as upstream does (through
// cAdvisor): the averages in percent, Total as the kernel counts it, in
// microseconds, although the API's comment says nanoseconds.
func psiStats(p hoststats.Pressure) *statsv1alpha1.PSIStats {
	data := func(d hoststats.PressureData) statsv1alpha1.PSIData {
		return statsv1alpha1.PSIData{Total: d.Total, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &statsv1alpha1.PSIStats{Some: data(p.Some), Full: data(p.Full)}
}

// Filesystem measures the filesystem holding path with statfs(2).
func (l *LinuxHost) Filesystem(_ context.Context, path string) (*FsInfo, error) {
	fs, err := hoststats.Statfs(path)
	if err != nil {
		return nil, err
	}
	dev, err := hoststats.Device(path)
	if err != nil {
		return nil, err
	}
	return &FsInfo{
		Time: l.clock.Now(), Device: dev,
		CapacityBytes: fs.CapacityBytes, AvailableBytes: fs.AvailableBytes, UsedBytes: fs.UsedBytes,
		Inodes: fs.Inodes, InodesFree: fs.InodesFree,
	}, nil
}

// DiskUsage walks path as du does (hoststats.DiskUsage); it fails only
// when ctx has ended.
func (l *LinuxHost) DiskUsage(ctx context.Context, path string) (DiskUsage, error) {
	if err := ctx.Err(); err != nil {
		return DiskUsage{}, err
	}
	b, n := hoststats.DiskUsage(path)
	return DiskUsage{Time: l.clock.Now(), Bytes: b, Inodes: n}, nil
}
