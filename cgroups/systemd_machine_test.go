//go:build systemd && linux

package cgroups_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// TestSystemdMachine runs the systemd driver against a real systemd: go
// test -tags systemd, as root, inside the namespaces of the systemd that
// hack/systemd-start.sh runs (hack/systemd-test.sh does it all). It
// creates the hierarchy and three pod slices, reads their limits back from
// the cgroup files and their units from systemd, and removes them.
func TestSystemdMachine(t *testing.T) {
	if _, err := os.Stat("/run/systemd/private"); err != nil {
		t.Fatalf("no systemd here (%v): run this test through hack/systemd-test.sh", err)
	}
	ctx := context.Background()
	// The test's own view of systemd, to read the units back.
	view, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()

	m, err := cgroups.New(cgroups.Options{Driver: cgroups.DriverSystemd, Pod: cgroups.PodOptions{PidsLimit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Start(ctx, cgroups.NodeConfig(list("cpu=2,memory=4Gi,pid=1000"))); err != nil {
		t.Fatalf("Start: %v", err)
	}
	v2 := m.Version() == 2
	const fs = "/sys/fs/cgroup"
	// A cgroup's file as the version has it: v1 under the controller's
	// hierarchy, v2 once, if the kernel gives that controller to v2 here
	// (on a hybrid machine, hack/systemd-start.sh's unified mode, none).
	controllers := strings.Fields(read(t, filepath.Join(fs, "cgroup.controllers")))
	type fileWant struct{ controller, cgroup, v1file, v1want, v2file, v2want string }
	checkFiles := func(files []fileWant) {
		t.Helper()
		for _, f := range files {
			path, want := filepath.Join(fs, f.controller, f.cgroup, f.v1file), f.v1want
			if v2 {
				if !slices.Contains(controllers, f.controller) {
					t.Logf("cgroup v2 without the %s controller here: %s not read", f.controller, f.v2file)
					continue
				}
				path, want = filepath.Join(fs, f.cgroup, f.v2file), f.v2want
			}
			if got := read(t, path); got != want {
				t.Errorf("%s = %s, want %s", path, got, want)
			}
		}
	}
	// v1's and v2's names of a property.
	shares, memory, io := "CPUShares", "MemoryLimit", "BlockIOAccounting"
	if v2 {
		shares, memory, io = "CPUWeight", "MemoryMax", "IOAccounting"
	}
	weight := func(v1Shares, v2Weight uint64) uint64 {
		if v2 {
			return v2Weight
		}
		return v1Shares
	}
	unit := func(name string) (active, cgroup string) {
		t.Helper()
		p, err := view.GetUnitPropertiesContext(ctx, name)
		if err != nil {
			t.Fatalf("unit %s: %v", name, err)
		}
		s, _ := p["ActiveState"].(string)
		tp, err := view.GetUnitTypePropertyContext(ctx, name, "Slice", "ControlGroup")
		if err != nil {
			t.Fatalf("unit %s: %v", name, err)
		}
		cg, _ := tp.Value.Value().(string)
		return s, cg
	}
	// prop is a slice unit's property as systemd has it.
	prop := func(name, property string) any {
		t.Helper()
		p, err := view.GetUnitTypePropertyContext(ctx, name, "Slice", property)
		if err != nil {
			t.Fatalf("unit %s: %s: %v", name, property, err)
		}
		return p.Value.Value()
	}
	defer func() {
		for _, u := range []string{"kubepods-besteffort.slice", "kubepods-burstable.slice", "kubepods.slice"} {
			ch := make(chan string, 1)
			if _, err := view.StopUnitContext(ctx, u, "replace", ch); err == nil {
				<-ch
			}
		}
	}()

	for _, c := range []struct{ unit, cgroup string }{
		{"kubepods.slice", "/kubepods.slice"},
		{"kubepods-burstable.slice", "/kubepods.slice/kubepods-burstable.slice"},
		{"kubepods-besteffort.slice", "/kubepods.slice/kubepods-besteffort.slice"},
	} {
		if s, cg := unit(c.unit); s != "active" || cg != c.cgroup {
			t.Errorf("unit %s: %s in %q, want active in %q", c.unit, s, cg, c.cgroup)
		}
	}
	checkFiles([]fileWant{
		{"cpu", "kubepods.slice", "cpu.shares", "2048", "cpu.weight", "79"},
		{"memory", "kubepods.slice", "memory.limit_in_bytes", "4294967296", "memory.max", "4294967296"},
		{"pids", "kubepods.slice", "pids.max", "1000", "pids.max", "1000"},
		{"cpu", "kubepods.slice/kubepods-besteffort.slice", "cpu.shares", "2", "cpu.weight", "1"},
	})

	guaranteed := pod("0a1b2c3d-0000-4000-8000-000000000001", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi")
	burstable := pod("0a1b2c3d-0000-4000-8000-000000000002", "cpu=250m/cpu=1")
	besteffort := pod("0a1b2c3d-0000-4000-8000-000000000003", "")
	if err := m.UpdateQOS([]*v1.Pod{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{guaranteed, burstable, besteffort} {
		if err := m.EnsurePod(p); err != nil {
			t.Fatalf("EnsurePod %s: %v", p.Name, err)
		}
		if !m.PodExists(p) {
			t.Fatalf("pod %s: no cgroup after EnsurePod", p.Name)
		}
	}
	if err := m.UpdateQOS([]*v1.Pod{guaranteed, burstable, besteffort}); err != nil {
		t.Fatal(err)
	}
	const (
		gSlice  = "kubepods.slice/kubepods-pod0a1b2c3d_0000_4000_8000_000000000001.slice"
		buSlice = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000002.slice"
		beSlice = "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_0000_4000_8000_000000000003.slice"
	)
	if parent, _ := m.CgroupParent(burstable); parent != "/"+buSlice {
		t.Errorf("CgroupParent = %s, want /%s", parent, buSlice)
	}
	for _, s := range []string{gSlice, buSlice, beSlice} {
		if st, cg := unit(filepath.Base(s)); st != "active" || cg != "/"+s {
			t.Errorf("unit %s: %s in %q, want active in /%s", filepath.Base(s), st, cg, s)
		}
	}
	checkFiles([]fileWant{
		{"cpu", gSlice, "cpu.shares", "512", "cpu.weight", "20"},
		{"cpu", gSlice, "cpu.cfs_quota_us", "50000", "cpu.max", "50000 100000"},
		{"cpu", gSlice, "cpu.cfs_period_us", "100000", "cpu.max", "50000 100000"},
		{"memory", gSlice, "memory.limit_in_bytes", "67108864", "memory.max", "67108864"},
		{"pids", gSlice, "pids.max", "100", "pids.max", "100"},
		{"cpu", buSlice, "cpu.shares", "256", "cpu.weight", "10"},
		{"cpu", buSlice, "cpu.cfs_quota_us", "100000", "cpu.max", "100000 100000"},
		{"memory", buSlice, "memory.limit_in_bytes", "9223372036854771712", "memory.max", "max"},
		{"cpu", beSlice, "cpu.shares", "2", "cpu.weight", "1"},
		{"cpu", beSlice, "cpu.cfs_quota_us", "-1", "cpu.max", "max 100000"},
		{"cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares", "256", "cpu.weight", "10"},
	})
	// systemd has the properties, not only the files.
	for _, c := range []struct {
		unit, property string
		want           any
	}{
		{"kubepods.slice", shares, weight(2048, 79)},
		{"kubepods.slice", memory, uint64(4294967296)},
		{"kubepods.slice", "TasksMax", uint64(1000)},
		{"kubepods-besteffort.slice", shares, weight(2, 1)},
		{"kubepods-burstable.slice", shares, weight(256, 10)},
		{filepath.Base(gSlice), shares, weight(512, 20)},
		{filepath.Base(gSlice), "CPUQuotaPerSecUSec", uint64(500000)},
		{filepath.Base(gSlice), "CPUQuotaPeriodUSec", uint64(100000)},
		{filepath.Base(gSlice), memory, uint64(67108864)},
		{filepath.Base(gSlice), "TasksMax", uint64(100)},
		{filepath.Base(buSlice), "CPUQuotaPerSecUSec", uint64(1000000)},
		{filepath.Base(beSlice), shares, weight(2, 1)},
		{filepath.Base(beSlice), "MemoryAccounting", true},
		{filepath.Base(beSlice), io, true},
	} {
		if got := prop(c.unit, c.property); got != c.want {
			t.Errorf("unit %s: %s = %v, want %v", c.unit, c.property, got, c.want)
		}
	}
	if got, err := view.GetUnitPropertyContext(ctx, filepath.Base(beSlice), "DefaultDependencies"); err != nil || got.Value.Value() != false {
		t.Errorf("unit %s: DefaultDependencies = %v, %v; want false", filepath.Base(beSlice), got, err)
	}
	if got, _ := view.GetUnitPropertyContext(ctx, filepath.Base(buSlice), "Wants"); got == nil ||
		!slices.Contains(got.Value.Value().([]string), "kubepods-burstable.slice") {
		t.Errorf("unit %s: Wants = %v, want its parent", filepath.Base(buSlice), got)
	}

	// The hierarchies systemd does not manage have the cgroup too (it
	// trims those of the controllers it manages but the unit does not
	// use, devices here, as for upstream's kubelet).
	for _, h := range []string{"cpuset", "freezer", "systemd", "unified"} {
		if !v2 && !exists(filepath.Join(fs, h, gSlice)) {
			t.Errorf("no %s cgroup %s", h, gSlice)
		}
	}

	// A process left in a pod cgroup is killed when it is removed.
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleep.Wait() }()
	pid := strconv.Itoa(sleep.Process.Pid)
	hierarchies := []string{"cpu", "memory", "pids", "systemd"}
	if v2 {
		hierarchies = []string{""}
	}
	for _, h := range hierarchies {
		if err := os.WriteFile(filepath.Join(fs, h, beSlice, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	found, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 || found[types.UID(besteffort.UID)] == nil {
		t.Fatalf("Pods = %v, want the three", found)
	}
	m.CleanupOrphans(found, func(uid types.UID) bool { return uid == guaranteed.UID }, nil)
	if err := <-done; err == nil {
		t.Error("the process in the removed pod cgroup exited by itself")
	}
	for _, s := range []string{buSlice, beSlice} {
		if st, _ := unit(filepath.Base(s)); st != "inactive" {
			t.Errorf("unit %s: %s after cleanup, want inactive", filepath.Base(s), st)
		}
		hierarchies := []string{"cpu", "cpuset", "memory", "pids", "systemd", "unified"}
		if v2 {
			hierarchies = []string{""}
		}
		for _, h := range hierarchies {
			if exists(filepath.Join(fs, h, s)) {
				t.Errorf("%s cgroup %s left after cleanup", h, s)
			}
		}
	}
	if !m.PodExists(guaranteed) || m.PodExists(burstable) {
		t.Error("cleanup removed the running pod or kept an orphan")
	}
	n, _ := m.PodName(guaranteed)
	if err := m.Destroy(n); err != nil {
		t.Fatal(err)
	}
	if st, _ := unit(filepath.Base(gSlice)); st != "inactive" || m.PodExists(guaranteed) {
		t.Errorf("unit %s: %s after Destroy", filepath.Base(gSlice), st)
	}
}
