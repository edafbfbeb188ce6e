//go:build linux

package hoststats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupDir is the directory of the cgroup rel: in the v1 hierarchy of
// controller, or in the v2 unified one.
func (h Host) cgroupDir(controller, rel string) string {
	if h.CgroupV2() {
		return filepath.Join(h.CgroupRoot, rel)
	}
	return filepath.Join(h.CgroupRoot, controller, rel)
}

// CgroupCFS reads the CFS counters of the cgroup rel (cpu.stat); ok is
// false when the cgroup sets no CPU quota (v2 cpu.max, v1
// cpu.cfs_quota_us), which cAdvisor serves no CFS series for.
func (h Host) CgroupCFS(rel string) (cfs CFS, ok bool, err error) {
	dir := h.cgroupDir("cpu", rel)
	quotaFile := "cpu.cfs_quota_us"
	if h.CgroupV2() {
		quotaFile = "cpu.max"
	}
	data, err := os.ReadFile(filepath.Join(dir, quotaFile))
	if err != nil {
		return CFS{}, false, err
	}
	if ok, err = ParseCPUQuota(data); err != nil || !ok {
		return CFS{}, false, wrapPath(filepath.Join(dir, quotaFile), err)
	}
	if data, err = os.ReadFile(filepath.Join(dir, "cpu.stat")); err != nil {
		return CFS{}, false, err
	}
	cfs, err = ParseCFS(data)
	if err != nil {
		return CFS{}, false, wrapPath(filepath.Join(dir, "cpu.stat"), err)
	}
	return cfs, true, nil
}

// CgroupMemoryCache reads the page cache of the cgroup rel from its
// memory.stat (MemoryCache; on v1 as memory.use_hierarchy says, which
// every kernel since 5.x has at 1).
func (h Host) CgroupMemoryCache(rel string) (uint64, error) {
	v2 := h.CgroupV2()
	dir := h.cgroupDir("memory", rel)
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	hierarchy := true
	if !v2 {
		if data, err := os.ReadFile(filepath.Join(dir, "memory.use_hierarchy")); err == nil && strings.TrimSpace(string(data)) == "0" {
			hierarchy = false
		}
	}
	cache, ok := MemoryCache(stat, v2, hierarchy)
	if !ok {
		return 0, fmt.Errorf("%s: no page cache figure", filepath.Join(dir, "memory.stat"))
	}
	return cache, nil
}

// blkioFiles are the v1 blkio statistics, in the order runc (and so
// cAdvisor) tries them: BFQ's, CFQ's, the throttling policy's recursive
// and then its own; each pair is the operations' file, whose having
// entries decides, then the bytes'.
var blkioFiles = [][2]string{
	{"blkio.bfq.io_serviced_recursive", "blkio.bfq.io_service_bytes_recursive"},
	{"blkio.io_serviced_recursive", "blkio.io_service_bytes_recursive"},
	{"blkio.throttle.io_serviced_recursive", "blkio.throttle.io_service_bytes_recursive"},
	{"blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"},
}

// CgroupIO reads the block I/O of the cgroup rel by device: v2 io.stat
// (ParseIOStat); on v1 the first pair of blkioFiles whose operations file
// has entries (ParseBlkio), none when no pair has. The devices are sorted.
func (h Host) CgroupIO(rel string) ([]DeviceIO, error) {
	if h.CgroupV2() {
		path := filepath.Join(h.CgroupRoot, rel, "io.stat")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		d, err := ParseIOStat(data)
		return d, wrapPath(path, err)
	}
	dir := filepath.Join(h.CgroupRoot, "blkio", rel)
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	for _, pair := range blkioFiles {
		data, err := os.ReadFile(filepath.Join(dir, pair[0]))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ops, err := ParseBlkio(nil, data, BlkioOps)
		if err != nil {
			return nil, wrapPath(filepath.Join(dir, pair[0]), err)
		}
		if len(ops) == 0 {
			continue
		}
		if data, err = os.ReadFile(filepath.Join(dir, pair[1])); err != nil {
			return nil, err
		}
		d, err := ParseBlkio(ops, data, BlkioBytes)
		return d, wrapPath(filepath.Join(dir, pair[1]), err)
	}
	return nil, nil
}

// CgroupChildren lists the child cgroups of rel by name, sorted: v2's, or
// v1's in the cpu hierarchy.
func (h Host) CgroupChildren(rel string) ([]string, error) {
	entries, err := os.ReadDir(h.cgroupDir("cpu", rel))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// CgroupProcs lists the processes in the cgroup rel itself (its
// cgroup.procs; v1's in the cpu hierarchy), not its descendants'.
func (h Host) CgroupProcs(rel string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(h.cgroupDir("cpu", rel), "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			continue
		}
		out = append(out, pid)
	}
	return out, nil
}

// ProcNetDev reads the network interfaces of a process's network
// namespace (/proc/<pid>/net/dev), without the ones Ignored names.
func (h Host) ProcNetDev(pid int) ([]Interface, error) {
	path := filepath.Join(h.ProcRoot, strconv.Itoa(pid), "net", "dev")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ifs, err := ParseNetDev(data)
	return ifs, wrapPath(path, err)
}

// BlockDevice names the block device major:minor as cAdvisor labels its
// I/O series: "/dev/" and the kernel's name of it (SysRoot's
// dev/block/<major>:<minor> link); "" when it cannot be resolved or
// SysRoot is empty.
func (h Host) BlockDevice(major, minor uint64) string {
	if h.SysRoot == "" {
		return ""
	}
	target, err := os.Readlink(filepath.Join(h.SysRoot, "dev", "block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return ""
	}
	name := filepath.Base(target)
	if !SafeName(name) {
		return ""
	}
	return "/dev/" + name
}

// wrapPath prefixes a parse error with the file it came from.
func wrapPath(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", path, err)
}
