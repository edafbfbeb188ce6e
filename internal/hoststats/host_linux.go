//go:build linux

package hoststats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Host reads the node's procfs, cgroup and sysfs files under their roots,
// so that tests can point it at fixtures. The zero value reads nothing: set
// ProcRoot and CgroupRoot.
type Host struct {
	// ProcRoot is where procfs is mounted ("/proc").
	ProcRoot string
	// CgroupRoot is where the cgroup hierarchy is mounted
	// ("/sys/fs/cgroup"): the v2 unified hierarchy, or the v1 directory
	// holding one directory per controller ("memory", "cpuacct").
	CgroupRoot string
	// SysRoot is where sysfs is mounted ("/sys"), for the names of block
	// devices; empty leaves them unnamed.
	SysRoot string
}

// CgroupV2 reports whether CgroupRoot is a cgroup v2 unified hierarchy.
func (h Host) CgroupV2() bool {
	_, err := os.Stat(filepath.Join(h.CgroupRoot, "cgroup.controllers"))
	return err == nil
}

// Meminfo reads /proc/meminfo.
func (h Host) Meminfo() (Meminfo, error) {
	data, err := os.ReadFile(filepath.Join(h.ProcRoot, "meminfo"))
	if err != nil {
		return Meminfo{}, err
	}
	return ParseMeminfo(data)
}

// Memory is the memory of a cgroup, in bytes.
type Memory struct {
	// Usage is the memory charged to the cgroup, page cache included.
	Usage uint64
	// InactiveFile is the inactive file-backed pages, which the kernel
	// reclaims first; Usage minus InactiveFile is the working set.
	InactiveFile uint64
	// RSS, PageFaults and MajorPageFaults come from memory.stat (v1's
	// total_rss, total_pgfault, total_pgmajfault; v2's anon, pgfault,
	// pgmajfault); they are meaningful only when HasStat.
	RSS, PageFaults, MajorPageFaults uint64
	// HasStat says whether memory.stat was read.
	HasStat bool
}

// CgroupMemory returns the memory of the cgroup rel ("" is the root). At
// the v2 root, which has no memory.current, usage is MemTotal-MemFree from
// mi and the inactive file pages come from memory.stat or, without it, from
// mi. On v1 without a memory controller, the root's figures come from mi
// alone. rel must be a relative path inside the hierarchy (SafeRelPath);
// the caller checks it.
func (h Host) CgroupMemory(rel string, mi Meminfo) (Memory, error) {
	if h.CgroupV2() {
		dir := filepath.Join(h.CgroupRoot, rel)
		stat, statErr := readKeyValues(filepath.Join(dir, "memory.stat"))
		data, curErr := os.ReadFile(filepath.Join(dir, "memory.current"))
		var m Memory
		switch {
		case curErr == nil:
			v, err := ParseUint(data)
			if err != nil {
				return Memory{}, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.current"), err)
			}
			m.Usage = v
		case rel == "":
			m.Usage = mi.Total - mi.Free
		default:
			return Memory{}, curErr
		}
		switch {
		case statErr == nil:
			m.InactiveFile = stat["inactive_file"]
			m.RSS, m.PageFaults, m.MajorPageFaults, m.HasStat = stat["anon"], stat["pgfault"], stat["pgmajfault"], true
		case rel == "" && mi.HasInactiveFile:
			m.InactiveFile = mi.InactiveFile
		case rel != "":
			return Memory{}, statErr
		}
		return m, nil
	}
	dir := filepath.Join(h.CgroupRoot, "memory", rel)
	data, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil && rel == "" && errors.Is(err, fs.ErrNotExist) {
		// No memory controller mounted: /proc/meminfo alone.
		return Memory{Usage: mi.Total - mi.Free, InactiveFile: mi.InactiveFile}, nil
	}
	if err != nil {
		return Memory{}, err
	}
	usage, err := ParseUint(data)
	if err != nil {
		return Memory{}, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.usage_in_bytes"), err)
	}
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return Memory{}, err
	}
	return Memory{
		Usage: usage, InactiveFile: stat["total_inactive_file"],
		RSS: stat["total_rss"], PageFaults: stat["total_pgfault"], MajorPageFaults: stat["total_pgmajfault"], HasStat: true,
	}, nil
}

// unlimitedMemory is the size from which a memory limit counts as none
// (cAdvisor's threshold: the kernel rounds "no limit" to a page multiple
// just below MaxInt64).
const unlimitedMemory = uint64(1) << 62

// CgroupMemoryLimit returns the memory limit of the cgroup rel (v2
// memory.max, v1 memory.limit_in_bytes); ok is false when it has none or
// the file cannot be read.
func (h Host) CgroupMemoryLimit(rel string) (limit uint64, ok bool) {
	path := filepath.Join(h.CgroupRoot, "memory", rel, "memory.limit_in_bytes")
	if h.CgroupV2() {
		path = filepath.Join(h.CgroupRoot, rel, "memory.max")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := ParseUint(data)
	if err != nil || v > unlimitedMemory {
		return 0, false
	}
	return v, true
}

// CgroupCPU returns the CPU time the cgroup rel has used, in nanoseconds:
// v2 cpu.stat's usage_usec, v1 cpuacct.usage. For the root ("") without
// either, it is the busy time of /proc/stat.
func (h Host) CgroupCPU(rel string) (uint64, error) {
	if h.CgroupV2() {
		kv, err := readKeyValues(filepath.Join(h.CgroupRoot, rel, "cpu.stat"))
		if err == nil {
			if us, ok := kv["usage_usec"]; ok {
				return us * 1000, nil
			}
			err = fmt.Errorf("%s: no usage_usec", filepath.Join(h.CgroupRoot, rel, "cpu.stat"))
		}
		if rel != "" {
			return 0, err
		}
		return h.procBusy()
	}
	var firstErr error
	for _, ctrl := range []string{"cpuacct", "cpu,cpuacct"} {
		path := filepath.Join(h.CgroupRoot, ctrl, rel, "cpuacct.usage")
		data, err := os.ReadFile(path)
		if err == nil {
			v, err := ParseUint(data)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if rel != "" {
		return 0, firstErr
	}
	return h.procBusy()
}

func (h Host) procBusy() (uint64, error) {
	ps, err := h.ProcStat()
	if err != nil {
		return 0, err
	}
	return ps.BusyNanoseconds, nil
}

// ProcStat reads /proc/stat.
func (h Host) ProcStat() (ProcStat, error) {
	data, err := os.ReadFile(filepath.Join(h.ProcRoot, "stat"))
	if err != nil {
		return ProcStat{}, err
	}
	return ParseProcStat(data)
}

// PIDs returns the node's task limit (the lower of kernel.pid_max and
// kernel.threads-max) and its number of tasks (/proc/loadavg), as upstream's
// pidlimit does.
func (h Host) PIDs() (maxPID, running uint64, err error) {
	data, err := os.ReadFile(filepath.Join(h.ProcRoot, "sys/kernel/pid_max"))
	if err != nil {
		return 0, 0, fmt.Errorf("pid limit: %w", err)
	}
	maxPID, err = ParseUint(data)
	if err != nil {
		return 0, 0, fmt.Errorf("pid limit: pid_max: %w", err)
	}
	if data, err := os.ReadFile(filepath.Join(h.ProcRoot, "sys/kernel/threads-max")); err == nil {
		if tm, err := ParseUint(data); err == nil && tm < maxPID {
			maxPID = tm
		}
	}
	data, err = os.ReadFile(filepath.Join(h.ProcRoot, "loadavg"))
	if err != nil {
		return 0, 0, fmt.Errorf("pid count: %w", err)
	}
	running, err = ParseLoadavgThreads(data)
	if err != nil {
		return 0, 0, fmt.Errorf("pid count: %w", err)
	}
	return maxPID, running, nil
}

// NetDev returns the node's network interfaces as the host's network
// namespace sees them: /proc/1/net/dev (PID 1 is in the host's namespace
// even when the caller is not), or the caller's /proc/net/dev when PID 1's
// cannot be read.
func (h Host) NetDev() ([]Interface, error) {
	data, err := os.ReadFile(filepath.Join(h.ProcRoot, "1/net/dev"))
	if err != nil {
		var err2 error
		if data, err2 = os.ReadFile(filepath.Join(h.ProcRoot, "net/dev")); err2 != nil {
			return nil, err
		}
	}
	return ParseNetDev(data)
}

// CgroupStartTime estimates when the cgroup rel was created as cAdvisor
// does: the oldest modification time of its directory and of a file the
// kernel rarely touches (v2 cgroup.events, v1 cgroup.clone_children of the
// memory or cpu controller), never before boot. The zero time means none
// could be read.
func (h Host) CgroupStartTime(rel string, boot time.Time) time.Time {
	var dirs []string
	file := "cgroup.clone_children"
	if h.CgroupV2() {
		dirs, file = []string{filepath.Join(h.CgroupRoot, rel)}, "cgroup.events"
	} else {
		dirs = []string{filepath.Join(h.CgroupRoot, "memory", rel), filepath.Join(h.CgroupRoot, "cpu", rel)}
	}
	var oldest time.Time
	for _, d := range dirs {
		for _, p := range []string{d, filepath.Join(d, file)} {
			if fi, err := os.Stat(p); err == nil && (oldest.IsZero() || fi.ModTime().Before(oldest)) {
				oldest = fi.ModTime()
			}
		}
	}
	if !oldest.IsZero() && oldest.Before(boot) {
		oldest = boot
	}
	return oldest
}

func readKeyValues(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kv, err := ParseKeyValues(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kv, nil
}

// ProcPressure reads the node's pressure stall information of resource
// ("cpu", "memory" or "io") from /proc/pressure; a kernel without PSI (or
// booted with psi=0) has no such file: an error wrapping fs.ErrNotExist
// or the read's own.
func (h Host) ProcPressure(resource string) (Pressure, error) {
	return readPressure(filepath.Join(h.ProcRoot, "pressure", resource))
}

// CgroupPressure reads the pressure stall information of resource
// ("cpu", "memory" or "io") of the cgroup rel from its <resource>.pressure
// file; cgroup v1 has none: an error.
func (h Host) CgroupPressure(rel, resource string) (Pressure, error) {
	if !h.CgroupV2() {
		return Pressure{}, fmt.Errorf("cgroup %s: %s pressure: %w (cgroup v1)", rel, resource, fs.ErrNotExist)
	}
	return readPressure(filepath.Join(h.CgroupRoot, rel, resource+".pressure"))
}

func readPressure(path string) (Pressure, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Pressure{}, err
	}
	p, err := ParsePressure(data)
	if err != nil {
		return Pressure{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
