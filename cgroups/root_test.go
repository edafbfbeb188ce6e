//go:build root && linux

package cgroups_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
// (rmdir: a cgroup's control files go with it). It is the package's
// removal written again on purpose: the test's cleanup does not lean on
// the code under test.
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
// root): a pod cgroup gets its CPU and memory limits and the node's pids
// limit (upstream's podPidsLimit), read back from the kernel.
func TestRootMachineCgroups(t *testing.T) {
	rootName, v2 := privateCgroupRoot(t)
	m, err := cgroups.New(cgroups.Options{CgroupRoot: "/" + rootName, StateDir: t.TempDir(), Pod: cgroups.PodOptions{PidsLimit: 1024}})
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
	cpu, mem, pids := filepath.Join(mount, "cpu", parent), filepath.Join(mount, "memory", parent), filepath.Join(mount, "pids", parent)
	want := map[string]string{filepath.Join(cpu, "cpu.shares"): "256", filepath.Join(cpu, "cpu.cfs_quota_us"): "25000",
		filepath.Join(mem, "memory.limit_in_bytes"): "67108864", filepath.Join(pids, "pids.max"): "1024"}
	if v2 {
		dir := filepath.Join(mount, parent)
		want = map[string]string{filepath.Join(dir, "cpu.weight"): "10", filepath.Join(dir, "cpu.max"): "25000 100000",
			filepath.Join(dir, "memory.max"): "67108864", filepath.Join(dir, "pids.max"): "1024"}
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

// machineSide is an agent's cgroup manager on the machine's cgroups; it
// kills for real, and records whom.
type machineSide struct {
	m *cgroups.Manager

	mu     sync.Mutex
	killed []int
}

func newMachineSide(t *testing.T, cgroupRoot, stateDir string) *machineSide {
	t.Helper()
	s := &machineSide{}
	m, err := cgroups.New(cgroups.Options{CgroupRoot: cgroupRoot, StateDir: stateDir, Kill: func(pid int) error {
		s.mu.Lock()
		s.killed = append(s.killed, pid)
		s.mu.Unlock()
		return syscall.Kill(pid, syscall.SIGKILL)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), cgroups.NodeConfig(list("cpu=1,memory=1Gi"))); err != nil {
		t.Fatal(err)
	}
	s.m = m
	return s
}

func (s *machineSide) kills() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.killed)
}

func (s *machineSide) cleanup(t *testing.T, running ...*v1.Pod) map[types.UID]cgroups.Name {
	t.Helper()
	return housekeep(t, s.m, running...)
}

// cleanupKilling is a housekeeping pass that finds proc in an orphan, then
// the next pass, once proc has exited: the first kills it but cannot
// remove a cgroup the process has not left yet (rmdir fails while it
// exits), the next removes it, as an agent's housekeeping does.
func (s *machineSide) cleanupKilling(t *testing.T, proc *process, running ...*v1.Pod) {
	t.Helper()
	s.cleanup(t, running...)
	if !proc.exited() {
		t.Fatalf("process %d in an orphaned pod cgroup was not killed (killed %v)", proc.pid, s.kills())
	}
	s.cleanup(t, running...)
}

// process is a process the test started in a pod cgroup.
type process struct {
	pid  int
	done chan struct{} // closed once it has exited
}

// startIn starts a process in the pod's cgroup (in the cpu, memory and
// pids hierarchies on v1), which is killed at the end of the test if it
// still runs.
func startIn(t *testing.T, m *cgroups.Manager, p *v1.Pod, v2 bool) *process {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc := &process{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(proc.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-proc.done })
	parent, _ := m.CgroupParent(p)
	dirs := []string{filepath.Join(mount, parent)}
	if !v2 {
		dirs = nil
		for _, h := range []string{"cpu", "memory", "pids"} {
			if exists(filepath.Join(mount, h, parent)) {
				dirs = append(dirs, filepath.Join(mount, h, parent))
			}
		}
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(proc.pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proc
}

// exited waits a while for the process to exit.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// TestRootTwoManagers: two agents' managers on this machine's cgroups,
// under one cgroup root of the test's own, each with its own record:
// neither removes the other's pod cgroups as orphans nor kills their
// processes, each removes its own; one restarted still owns what it made.
// Under two roots, neither sees the other's.
func TestRootTwoManagers(t *testing.T) {
	t.Run("one root", func(t *testing.T) {
		root, v2 := privateCgroupRoot(t)
		stateA := t.TempDir()
		a, b := newMachineSide(t, "/"+root, stateA), newMachineSide(t, "/"+root, t.TempDir())
		aRun, aDone := pod("a-run", "cpu=100m,memory=64Mi/cpu=100m,memory=64Mi"), pod("a-done", "cpu=100m/")
		bRun, bDone := pod("b-run", "cpu=100m/"), pod("b-done", "")
		for _, s := range []struct {
			side *machineSide
			pods []*v1.Pod
		}{{a, []*v1.Pod{aRun, aDone}}, {b, []*v1.Pod{bRun, bDone}}} {
			for _, p := range s.pods {
				if err := s.side.m.EnsurePod(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		aProc, bProc := startIn(t, a.m, aRun, v2), startIn(t, b.m, bRun, v2)

		if found := a.cleanup(t, aRun); len(found) != 4 {
			t.Fatalf("a's Pods = %v, want the four pods of both agents", found)
		}
		b.cleanup(t, bRun)
		if !a.m.PodExists(aRun) || !a.m.PodExists(bRun) || a.m.PodExists(aDone) || a.m.PodExists(bDone) {
			t.Errorf("after both cleanups: a-run %v, b-run %v (want both); a-done %v, b-done %v (want neither)",
				a.m.PodExists(aRun), a.m.PodExists(bRun), a.m.PodExists(aDone), a.m.PodExists(bDone))
		}
		if len(a.kills()) != 0 || len(b.kills()) != 0 || !aProc.running() || !bProc.running() {
			t.Errorf("killed %v and %v, want none", a.kills(), b.kills())
		}
		n, _ := a.m.PodName(bRun)
		if err := a.m.Destroy(n); !errors.Is(err, cgroups.ErrNotOwned) || !b.m.PodExists(bRun) {
			t.Errorf("a's Destroy of b's pod cgroup: %v", err)
		}

		// a restarted with its record: its cgroup goes, b's stays.
		a2 := newMachineSide(t, "/"+root, stateA)
		a2.cleanupKilling(t, aProc)
		if a2.m.PodExists(aRun) {
			t.Error("a restarted did not remove its own orphan")
		}
		if !b.m.PodExists(bRun) || !bProc.running() || !slices.Equal(a2.kills(), []int{aProc.pid}) {
			t.Errorf("a restarted removed b's pod cgroup (%v) or killed %v", !b.m.PodExists(bRun), a2.kills())
		}
		b.cleanupKilling(t, bProc)
		if b.m.PodExists(bRun) {
			t.Error("b did not remove its own orphan")
		}
	})

	t.Run("two roots", func(t *testing.T) {
		rootA, v2 := privateCgroupRoot(t)
		rootB, _ := privateCgroupRoot(t)
		a, b := newMachineSide(t, "/"+rootA, t.TempDir()), newMachineSide(t, "/"+rootB, t.TempDir())
		same, bOnly := pod("same-uid", "cpu=100m/"), pod("b-only", "cpu=300m/")
		for _, s := range []struct {
			side *machineSide
			pods []*v1.Pod
		}{{a, []*v1.Pod{same}}, {b, []*v1.Pod{same, bOnly}}} {
			for _, p := range s.pods {
				if err := s.side.m.EnsurePod(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		bProc := startIn(t, b.m, same, v2)
		if err := b.m.UpdateQOS([]*v1.Pod{same, bOnly}); err != nil {
			t.Fatal(err)
		}
		burstable := filepath.Join(mount, "cpu", rootB, "kubepods", "burstable", "cpu.shares")
		if v2 {
			burstable = filepath.Join(mount, rootB, "kubepods", "burstable", "cpu.weight")
		}
		before := read(t, burstable)

		if found := a.cleanup(t); len(found) != 1 {
			t.Errorf("a's Pods = %v, want its own pod only", found)
		}
		if err := a.m.UpdateQOS(nil); err != nil {
			t.Fatal(err)
		}
		if a.m.PodExists(same) || !b.m.PodExists(same) || !b.m.PodExists(bOnly) {
			t.Error("a removed b's pod cgroups, or not its own")
		}
		if got := read(t, burstable); got != before || len(a.kills()) != 0 || !bProc.running() {
			t.Errorf("b's burstable cgroup %s, then %s after a's housekeeping; a killed %v", before, got, a.kills())
		}
		b.cleanupKilling(t, bProc)
		if b.m.PodExists(same) {
			t.Error("b did not remove its own orphan")
		}
	})
}
