package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// fsDriver reads and writes cgroups as directories of a cgroup file
// system mounted at a root (/sys/fs/cgroup): the cgroupfs driver, on
// cgroup v1 (one hierarchy a directory under the root: cpu, memory, ...)
// or v2 (the unified hierarchy at the root).
type fsDriver struct {
	root string
	v2   bool
	// hierarchies are the v1 hierarchies' directories under root, one
	// each (cpu,cpuacct and its links cpu and cpuacct count once);
	// subsystems maps each v1 subsystem (and "systemd" for the named
	// hierarchy) to its directory.
	hierarchies []string
	subsystems  map[string]string
	// controllers are the v2 controllers the kubelet manages that the
	// root offers: cpu, cpuset, hugetlb, memory, pids.
	controllers []string
	remove      func(dir string) error
	kill        func(pid int) error
	// systemd spells the cgroups' directories as the systemd driver
	// names them (kubepods.slice/kubepods-burstable.slice).
	systemd bool
}

// openFS finds which cgroup version is mounted at root and its
// hierarchies. A cgroup.controllers file at the root means v2; else every
// directory under root with a cgroup.procs file is a v1 hierarchy named by
// its subsystems; the
// cgroups are made in "unified" too (the v2 hierarchy of hybrid systems,
// without controllers), as upstream's do.
func openFS(root string, remove func(string) error, kill func(int) error) (*fsDriver, error) {
	d := &fsDriver{root: root, remove: remove, kill: kill}
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		d.v2 = true
		have := strings.Fields(string(b))
		for _, c := range []string{"cpu", "cpuset", "hugetlb", "memory", "pids"} {
			if slices.Contains(have, c) {
				d.controllers = append(d.controllers, c)
			}
		}
		return d, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("cgroup root %s: %w", root, err)
	}
	d.subsystems = map[string]string{}
	seen := map[string]bool{}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(real, "cgroup.procs")); err != nil {
			// A mount point with no hierarchy mounted on it (systemd
			// makes some for controllers the kernel lacks).
			continue
		}
		if !seen[real] {
			seen[real] = true
			d.hierarchies = append(d.hierarchies, real)
		}
		for _, s := range strings.Split(filepath.Base(real), ",") {
			s = strings.TrimPrefix(s, "name=")
			if _, ok := d.subsystems[s]; !ok {
				d.subsystems[s] = real
			}
		}
	}
	if len(d.hierarchies) == 0 {
		return nil, fmt.Errorf("cgroup root %s: no cgroup v2 (cgroup.controllers) and no v1 hierarchy: %w", root, ErrNoCgroups)
	}
	return d, nil
}

// version is 1 or 2.
func (d *fsDriver) version() int {
	if d.v2 {
		return 2
	}
	return 1
}

// rel is the cgroup's directory relative to a hierarchy's root, as the
// driver spells it.
func (d *fsDriver) rel(n Name) string {
	if d.systemd {
		return filepath.FromSlash(n.Systemd())
	}
	return filepath.FromSlash(n.Cgroupfs())
}

// component reads the last name component of a cgroup directory's base
// name, as the driver spells it ("pod<uid>", or with systemd
// "kubepods-burstable-pod<uid>.slice").
func (d *fsDriver) component(base string) (string, bool) {
	if !d.systemd {
		return base, true
	}
	if !strings.HasSuffix(base, ".slice") {
		return "", false
	}
	n := ParseSystemd(base)
	if len(n) == 0 {
		return "", false
	}
	return n[len(n)-1], true
}

// dirs are the directories of a cgroup: one on v2, one a hierarchy on v1.
func (d *fsDriver) dirs(n Name) []string {
	rel := d.rel(n)
	if d.v2 {
		return []string{filepath.Join(d.root, rel)}
	}
	out := make([]string, len(d.hierarchies))
	for i, h := range d.hierarchies {
		out[i] = filepath.Join(h, rel)
	}
	return out
}

// present says whether the cgroup's directories all exist.
func (d *fsDriver) present(n Name) bool {
	for _, dir := range d.dirs(n) {
		if _, err := os.Stat(dir); err != nil {
			return false
		}
	}
	return true
}

// gone says whether none of the cgroup's directories exists (an error
// other than "not exist" counts as existing).
func (d *fsDriver) gone(n Name) bool {
	for _, dir := range d.dirs(n) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// exists says whether the cgroup is usable as upstream checks it: on v1,
// present in the cpu, cpuacct, cpuset, memory, pids, systemd and hugetlb
// hierarchies that are mounted; on v2, present with the managed
// controllers enabled for it by its parent.
func (d *fsDriver) exists(n Name) bool {
	if d.v2 {
		dir := filepath.Join(d.root, d.rel(n))
		if _, err := os.Stat(dir); err != nil {
			return false
		}
		if len(n) == 0 {
			return true
		}
		enabled := readFields(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
		for _, c := range d.controllers {
			if !slices.Contains(enabled, c) {
				return false
			}
		}
		return true
	}
	for _, s := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "systemd", "hugetlb"} {
		h, ok := d.subsystems[s]
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Join(h, d.rel(n))); err != nil {
			return false
		}
	}
	return true
}

// readFields reads a file of space-separated words, a leading "+" dropped
// (what was written to cgroup.subtree_control of a plain directory).
func readFields(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	for i := range f {
		f[i] = strings.TrimPrefix(f[i], "+")
	}
	return f
}

// create makes the cgroup and its missing parents, then writes rc.
func (d *fsDriver) create(n Name, rc ResourceConfig) error {
	if err := d.mkdirs(n); err != nil {
		return err
	}
	return d.set(n, rc)
}

// mkdirs makes the cgroup's directories and its missing parents'. On v1
// a new cpuset cgroup gets its parent's CPUs and memory nodes (it could
// hold no task without them); on v2 each parent enables the managed
// controllers for its children.
func (d *fsDriver) mkdirs(n Name) error {
	var path []string
	for i := range n {
		path = append(path, filepath.Base(d.rel(n[:i+1])))
	}
	if d.v2 {
		dir := d.root
		for _, c := range path {
			if len(d.controllers) > 0 {
				enable := "+" + strings.Join(d.controllers, " +")
				if err := writeFile(dir, "cgroup.subtree_control", enable); err != nil {
					return err
				}
			}
			dir = filepath.Join(dir, c)
			if err := mkdir(dir); err != nil {
				return err
			}
		}
	} else {
		for _, h := range d.hierarchies {
			dir := h
			for _, c := range path {
				parent := dir
				dir = filepath.Join(dir, c)
				if err := mkdir(dir); err != nil {
					return err
				}
				if h == d.subsystems["cpuset"] {
					if err := inheritCpuset(parent, dir); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create cgroup: %w", err)
	}
	return nil
}

// inheritCpuset copies cpuset.cpus and cpuset.mems from parent to dir where
// dir's are empty.
func inheritCpuset(parent, dir string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, _ := os.ReadFile(filepath.Join(dir, f))
		if strings.TrimSpace(string(cur)) != "" {
			continue
		}
		v, err := os.ReadFile(filepath.Join(parent, f))
		if err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
		if err := writeFile(dir, f, strings.TrimSpace(string(v))); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes one control file, as the kernel wants it: one write.
func writeFile(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// set writes rc to an existing cgroup, leaving what rc leaves nil (or, as
// upstream's writer, zero).
func (d *fsDriver) set(n Name, rc ResourceConfig) error {
	rel := d.rel(n)
	if d.v2 {
		return d.setV2(filepath.Join(d.root, rel), rc)
	}
	in := func(subsystem string) (string, bool) {
		h, ok := d.subsystems[subsystem]
		return filepath.Join(h, rel), ok
	}
	if dir, ok := in("cpu"); ok {
		if rc.CPUShares != nil && *rc.CPUShares != 0 {
			if err := writeFile(dir, "cpu.shares", strconv.FormatUint(*rc.CPUShares, 10)); err != nil {
				return err
			}
		}
		if rc.CPUPeriod != nil && *rc.CPUPeriod != 0 {
			if err := writeFile(dir, "cpu.cfs_period_us", strconv.FormatUint(*rc.CPUPeriod, 10)); err != nil {
				return err
			}
		}
		if rc.CPUQuota != nil && *rc.CPUQuota != 0 {
			if err := writeFile(dir, "cpu.cfs_quota_us", strconv.FormatInt(*rc.CPUQuota, 10)); err != nil {
				return err
			}
		}
	}
	if dir, ok := in("memory"); ok && rc.Memory != nil && *rc.Memory != 0 {
		if err := writeFile(dir, "memory.limit_in_bytes", strconv.FormatInt(*rc.Memory, 10)); err != nil {
			return err
		}
	}
	if dir, ok := in("pids"); ok && rc.PidsLimit != nil && *rc.PidsLimit != 0 {
		if err := writeFile(dir, "pids.max", maxOrNumber(*rc.PidsLimit)); err != nil {
			return err
		}
	}
	if dir, ok := in("hugetlb"); ok {
		for size, limit := range rc.HugePageLimits {
			if err := writeFile(dir, "hugetlb."+podspec.HugePageUnitSize(size)+".limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *fsDriver) setV2(dir string, rc ResourceConfig) error {
	has := func(c string) bool { return slices.Contains(d.controllers, c) }
	if has("cpu") {
		if rc.CPUShares != nil && *rc.CPUShares != 0 {
			if err := writeFile(dir, "cpu.weight", strconv.FormatUint(SharesToWeight(*rc.CPUShares), 10)); err != nil {
				return err
			}
		}
		quota, period := int64(0), uint64(0)
		if rc.CPUQuota != nil {
			quota = *rc.CPUQuota
		}
		if rc.CPUPeriod != nil {
			period = *rc.CPUPeriod
		}
		if quota != 0 || period != 0 {
			v := "max"
			if quota > 0 {
				v = strconv.FormatInt(quota, 10)
			}
			if period != 0 {
				v += " " + strconv.FormatUint(period, 10)
			}
			if err := writeFile(dir, "cpu.max", v); err != nil {
				return err
			}
		}
	}
	if has("memory") && rc.Memory != nil && *rc.Memory != 0 {
		if err := writeFile(dir, "memory.max", maxOrNumber(*rc.Memory)); err != nil {
			return err
		}
	}
	if has("pids") && rc.PidsLimit != nil && *rc.PidsLimit != 0 {
		if err := writeFile(dir, "pids.max", maxOrNumber(*rc.PidsLimit)); err != nil {
			return err
		}
	}
	if has("hugetlb") {
		for size, limit := range rc.HugePageLimits {
			if err := writeFile(dir, "hugetlb."+podspec.HugePageUnitSize(size)+".max", strconv.FormatInt(limit, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

func maxOrNumber(v int64) string {
	if v < 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// children lists the names of the cgroups directly under n, in any
// hierarchy.
func (d *fsDriver) children(n Name) ([]string, error) {
	var out []string
	for _, dir := range d.dirs(n) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list cgroup %s: %w", d.rel(n), err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// destroy kills every process in the cgroup and below, in every
// hierarchy, then removes its directories, deepest first. A cgroup that is
// not there is no error.
func (d *fsDriver) destroy(n Name) error {
	if err := d.killAll(n); err != nil {
		return err
	}
	return d.removeAll(n)
}

// killAll kills every process in the cgroup and below, in every
// hierarchy.
func (d *fsDriver) killAll(n Name) error {
	dirs := d.dirs(n)
	var pids []int
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() {
				pids = append(pids, readProcs(filepath.Join(p, "cgroup.procs"))...)
			}
			return nil
		})
	}
	slices.Sort(pids)
	var errs []error
	for _, pid := range slices.Compact(pids) {
		if err := d.kill(pid); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("destroy cgroup %s: %w", d.rel(n), errors.Join(errs...))
	}
	return nil
}

// removeAll removes the cgroup's directories in every hierarchy, deepest
// first.
func (d *fsDriver) removeAll(n Name) error {
	for _, dir := range d.dirs(n) {
		if err := d.removeTree(dir); err != nil {
			return fmt.Errorf("destroy cgroup %s: %w", d.rel(n), err)
		}
	}
	return nil
}

// removeTree removes dir's sub-cgroups, then dir.
func (d *fsDriver) removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := d.removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := d.remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// readProcs reads the process IDs of a cgroup.procs file; none when it
// cannot be read.
func readProcs(file string) []int {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(s.Text())); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}
