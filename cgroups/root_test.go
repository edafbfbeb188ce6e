//go:build root && linux

package cgroups_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// mount is the machine's cgroup file system.
const mount = "/sys/fs/cgroup"

// machineHierarchies are the directories of the machine's cgroup
// hierarchies: the mount itself on cgroup v2, else each v1 hierarchy
// (links followed, each once).
func machineHierarchies(t *testing.T) (dirs []string, v2 bool) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		return []string{mount}, true
	}
	entries, err := os.ReadDir(mount)
	if err != nil {
		t.Skipf("no cgroup file system to write at %s: %v", mount, err)
	}
	for _, e := range entries {
		real, err := filepath.EvalSymlinks(filepath.Join(mount, e.Name()))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(real, "cgroup.procs")); err == nil && !slices.Contains(dirs, real) {
			dirs = append(dirs, real)
		}
	}
	if len(dirs) == 0 {
		t.Skipf("no cgroup file system to write at %s: no v2 and no v1 hierarchy", mount)
	}
	return dirs, false
}

// privateCgroupRoot makes a cgroup of the test's own, kk-test-<random>,
// directly under the root of every hierarchy, for a Manager's CgroupRoot,
// and removes it and every cgroup below it when the test ends. It skips
// the test when it is not root or when the cgroup file system cannot be
// written.
func privateCgroupRoot(t *testing.T) (name string, v2 bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test creates cgroups under " + mount)
	}
	hierarchies, v2 := machineHierarchies(t)
	name = "kk-test-" + strings.ToLower(rand.Text()[:12])
	t.Cleanup(func() {
		for _, h := range hierarchies {
			if err := removeCgroups(filepath.Join(h, name)); err != nil {
				t.Errorf("remove the test's cgroups: %v", err)
			}
		}
	})
	for _, h := range hierarchies {
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				t.Skipf("the cgroup file system at %s is not writable: %v", mount, err)
			}
			t.Fatal(err)
		}
		// A v1 cpuset cgroup holds no task until it has CPUs and memory
		// nodes; a cgroup root has them.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				write(t, filepath.Join(dir, f), strings.TrimSpace(string(b)))
			}
		}
	}
	return name, v2
}

// removeCgroups removes a cgroup and the cgroups below it, deepest first
// (rmdir: a cgroup's control files go with it).
func removeCgroups(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroups(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return os.Remove(dir)
}

// TestRootMachineCgroups runs the hierarchy on this machine's cgroups,
// under a cgroup root of its own that it removes (go test -tags root, as
// root).
func TestRootMachineCgroups(t *testing.T) {
	rootName, v2 := privateCgroupRoot(t)
	m, err := cgroups.New(cgroups.Options{CgroupRoot: "/" + rootName, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), cgroups.NodeConfig(list("cpu=1,memory=1Gi"))); err != nil {
		t.Fatal(err)
	}
	p := pod("0a1b2c3d-0000-4000-8000-000000000001", "cpu=250m,memory=64Mi/cpu=250m,memory=64Mi")
	if err := m.EnsurePod(p); err != nil {
		t.Fatal(err)
	}
	parent, _ := m.CgroupParent(p)
	cpu, mem := filepath.Join(mount, "cpu", parent), filepath.Join(mount, "memory", parent)
	want := map[string]string{filepath.Join(cpu, "cpu.shares"): "256", filepath.Join(cpu, "cpu.cfs_quota_us"): "25000",
		filepath.Join(mem, "memory.limit_in_bytes"): "67108864"}
	if v2 {
		dir := filepath.Join(mount, parent)
		want = map[string]string{filepath.Join(dir, "cpu.weight"): "10", filepath.Join(dir, "cpu.max"): "25000 100000",
			filepath.Join(dir, "memory.max"): "67108864"}
	}
	for f, w := range want {
		if got := read(t, f); got != w {
			t.Errorf("%s = %q, want %q", f, got, w)
		}
	}
	n, _ := m.PodName(p)
	if err := m.Destroy(n); err != nil {
		t.Fatal(err)
	}
	if m.PodExists(p) {
		t.Error("pod cgroup still there")
	}
}
