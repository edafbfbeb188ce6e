//go:build root && linux

package cgroups_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// TestRootMachineCgroups runs the hierarchy on this machine's cgroups,
// under a cgroup root of its own that it removes (go test -tags root, as
// root).
func TestRootMachineCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const mount = "/sys/fs/cgroup"
	rootName := fmt.Sprintf("kk-cgroups-test-%d", os.Getpid())
	v2 := false
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		v2 = true
	}
	// The cgroup root, in every hierarchy (v1) or once (v2).
	var dirs []string
	if v2 {
		dirs = []string{filepath.Join(mount, rootName)}
	} else {
		entries, err := os.ReadDir(mount)
		if err != nil {
			t.Skip(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(mount, e.Name(), rootName))
			}
		}
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			t.Skipf("cannot create a cgroup: %v", err)
		}
	}
	m, err := cgroups.New(cgroups.Options{CgroupRoot: "/" + rootName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []cgroups.Name{{rootName, "kubepods"}} {
			if err := m.Destroy(n); err != nil {
				t.Errorf("destroy: %v", err)
			}
		}
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				t.Errorf("remove %s: %v", d, err)
			}
		}
	})
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
