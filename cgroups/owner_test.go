package cgroups_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// logs keeps what a manager logged.
type logs struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is how many lines have all of words.
func (l *logs) count(words ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.b.String(), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			n++
		}
	}
	return n
}

// agentSide is one agent's cgroup manager, as an agent would make it.
type agentSide struct {
	m    *cgroups.Manager
	k    *killer
	logs *logs
}

// startSide starts a manager on the tree at root, with systemd (shared by
// the agents of one machine) when opts asks for that driver.
func startSide(t *testing.T, root string, sd *fakeSystemd, opts cgroups.Options) agentSide {
	t.Helper()
	l := &logs{}
	opts.Logger = slog.New(slog.NewTextHandler(l, nil))
	if opts.Driver == cgroups.DriverSystemd {
		opts.Systemd = sd
	}
	m, k := newManager(t, root, opts)
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	return agentSide{m, k, l}
}

func (s agentSide) ensure(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := s.m.EnsurePod(p); err != nil {
			t.Fatal(err)
		}
	}
}

func (s agentSide) cleanup(t *testing.T, running ...*v1.Pod) map[types.UID]cgroups.Name {
	t.Helper()
	return housekeep(t, s.m, running...)
}

// housekeep runs m's housekeeping pass, as an agent's, in which only the
// pods of running may be running; it returns the pod cgroups it found.
func housekeep(t *testing.T, m *cgroups.Manager, running ...*v1.Pod) map[types.UID]cgroups.Name {
	t.Helper()
	found, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	m.CleanupOrphans(found, func(uid types.UID) bool {
		return slices.ContainsFunc(running, func(p *v1.Pod) bool { return p.UID == uid })
	}, nil)
	return found
}

// ownershipSetups are the drivers and cgroup versions the ownership tests
// run on: a directory tree for the cgroup mount, and where a pod cgroup's
// processes are listed.
var ownershipSetups = []struct {
	name   string
	driver cgroups.Driver
	tree   func(testing.TB) string
	procs  func(root, parent string) string // a container cgroup's cgroup.procs in the pod cgroup
}{
	{"cgroupfs-v1", cgroups.DriverCgroupfs, fakeV1, func(root, parent string) string {
		return filepath.Join(root, "memory", parent, "c1", "cgroup.procs")
	}},
	{"cgroupfs-v2", cgroups.DriverCgroupfs, fakeV2, func(root, parent string) string {
		return filepath.Join(root, parent, "c1", "cgroup.procs")
	}},
	{"systemd-v1", cgroups.DriverSystemd, fakeV1, func(root, parent string) string {
		return filepath.Join(root, "memory", parent, "c1.scope", "cgroup.procs")
	}},
}

// addProcess puts a process (pid 4242) in a container cgroup of the pod's.
func addProcess(t *testing.T, m *cgroups.Manager, procs func(root, parent string) string, root string, p *v1.Pod) {
	t.Helper()
	parent, err := m.CgroupParent(p)
	if err != nil {
		t.Fatal(err)
	}
	f := procs(root, parent)
	if err := os.Mkdir(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, f, "4242\n")
}

// TestOwnershipOneRoot: two agents' managers side by side under the same
// cgroup root, each with a record of its own: each lists the other's pod
// cgroups, and neither removes them as orphans (nor kills their
// processes, nor destroys them on request, nor takes them over), while
// each still removes its own; an agent restarted with its record removes
// what it made before, and still not the other's.
func TestOwnershipOneRoot(t *testing.T) {
	for _, tc := range ownershipSetups {
		t.Run(tc.name, func(t *testing.T) {
			root, sd := tc.tree(t), newFakeSystemd(252)
			stateA, stateB := t.TempDir(), t.TempDir()
			a := startSide(t, root, sd, cgroups.Options{Driver: tc.driver, StateDir: stateA})
			b := startSide(t, root, sd, cgroups.Options{Driver: tc.driver, StateDir: stateB})
			aRun, aDone := pod("a-run", "cpu=1,memory=1Gi/cpu=1,memory=1Gi"), pod("a-done", "cpu=100m/")
			bRun, bDone := pod("b-run", ""), pod("b-done", "cpu=200m/")
			a.ensure(t, aRun, aDone)
			b.ensure(t, bRun, bDone)
			addProcess(t, b.m, tc.procs, root, bRun)

			found := a.cleanup(t, aRun)
			if len(found) != 4 {
				t.Fatalf("a's Pods = %v, want the four pods of both agents", found)
			}
			b.cleanup(t, bRun)
			a.cleanup(t, aRun) // a second pass: logged once
			for _, p := range []*v1.Pod{aRun, bRun} {
				if !a.m.PodExists(p) {
					t.Errorf("%s's cgroup was removed", p.UID)
				}
			}
			for _, p := range []*v1.Pod{aDone, bDone} {
				if a.m.PodExists(p) {
					t.Errorf("%s's cgroup is left: its agent did not remove its own orphan", p.UID)
				}
			}
			if len(a.k.pids) != 0 || len(b.k.pids) != 0 {
				t.Errorf("killed %v and %v, want none", a.k.pids, b.k.pids)
			}
			bRunName, _ := b.m.CgroupParent(bRun)
			if n := a.logs.count("not ours", bRunName); n != 1 {
				t.Errorf("a logged b's running pod cgroup %d times as not ours, want once:\n%s", n, a.logs.b.String())
			}
			if n := b.logs.count("not ours"); n != 1 {
				t.Errorf("b logged %d cgroups as not ours, want one (a-run; a-done was gone by its pass):\n%s", n, b.logs.b.String())
			}

			// Asked to, a destroys none of b's, nor takes one over.
			n, _ := a.m.PodName(bRun)
			if err := a.m.Destroy(n); !errors.Is(err, cgroups.ErrNotOwned) {
				t.Errorf("a's Destroy of b's pod cgroup: %v, want ErrNotOwned", err)
			}
			if err := a.m.EnsurePod(bRun); err != nil {
				t.Errorf("a's EnsurePod of b's existing pod cgroup: %v", err)
			}
			if err := a.m.Destroy(n); !errors.Is(err, cgroups.ErrNotOwned) || !b.m.PodExists(bRun) || len(a.k.pids) != 0 {
				t.Errorf("a's Destroy of b's pod cgroup after EnsurePod: %v (it took it over)", err)
			}

			// a restarted: its record says what it made.
			a2 := startSide(t, root, sd, cgroups.Options{Driver: tc.driver, StateDir: stateA})
			a2.cleanup(t)
			if a2.m.PodExists(aRun) || !a2.m.PodExists(bRun) || len(a2.k.pids) != 0 {
				t.Errorf("a restarted: a-run's cgroup exists %v (want false), b-run's %v (want true), killed %v",
					a2.m.PodExists(aRun), a2.m.PodExists(bRun), a2.k.pids)
			}
			// b removes its own, and kills what is left in it.
			b.cleanup(t)
			if b.m.PodExists(bRun) || !slices.Equal(b.k.pids, []int{4242}) {
				t.Errorf("b's orphan: exists %v, killed %v", b.m.PodExists(bRun), b.k.pids)
			}
		})
	}
}

// TestOwnershipTwoRoots: under cgroup roots of their own, two agents'
// managers do not see each other's pod cgroups, nor write each other's
// QoS cgroups.
func TestOwnershipTwoRoots(t *testing.T) {
	for _, tc := range ownershipSetups {
		t.Run(tc.name, func(t *testing.T) {
			root, sd := tc.tree(t), newFakeSystemd(252)
			var cgroupRoots []string
			for _, r := range []string{"node-a", "node-b"} {
				cgroupRoots = append(cgroupRoots, "/"+r)
				spelled := "/" + r
				if tc.driver == cgroups.DriverSystemd {
					spelled = cgroups.Name{r}.Systemd()
				}
				hierarchies := []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"}
				if exists(filepath.Join(root, "cgroup.controllers")) {
					hierarchies = []string{""}
				}
				for _, h := range hierarchies {
					if err := os.MkdirAll(filepath.Join(root, h, spelled), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if hierarchies[0] != "" {
					write(t, filepath.Join(root, "cpuset", spelled, "cpuset.cpus"), "0-1")
				}
			}
			a := startSide(t, root, sd, cgroups.Options{Driver: tc.driver, CgroupRoot: cgroupRoots[0], StateDir: t.TempDir()})
			b := startSide(t, root, sd, cgroups.Options{Driver: tc.driver, CgroupRoot: cgroupRoots[1], StateDir: t.TempDir()})
			aPod, bPod := pod("same-uid", "cpu=100m/"), pod("b-only", "cpu=300m/")
			a.ensure(t, aPod)
			b.ensure(t, aPod, bPod) // the same UID under each root: two cgroups
			burstable := filepath.Join(root, "cpu,cpuacct", "node-b", "kubepods", "burstable", "cpu.shares")
			if tc.name == "cgroupfs-v2" {
				burstable = filepath.Join(root, "node-b", "kubepods", "burstable", "cpu.weight")
			}
			if tc.driver == cgroups.DriverSystemd {
				burstable = filepath.Join(root, "cpu,cpuacct", "node_b.slice", "node_b-kubepods.slice", "node_b-kubepods-burstable.slice", "cpu.shares")
			}
			if err := b.m.UpdateQOS([]*v1.Pod{aPod, bPod}); err != nil {
				t.Fatal(err)
			}
			before := read(t, burstable)

			found := a.cleanup(t)
			if err := a.m.UpdateQOS(nil); err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 {
				t.Errorf("a's Pods = %v, want its own pod only", found)
			}
			if a.m.PodExists(aPod) || !b.m.PodExists(aPod) || !b.m.PodExists(bPod) {
				t.Error("a removed b's pod cgroups, or not its own")
			}
			if got := read(t, burstable); got != before || before == "<none>" {
				t.Errorf("b's burstable cgroup: %s, then %s after a's housekeeping", before, got)
			}
			if n := a.logs.count("not ours"); n != 0 {
				t.Errorf("a found %d cgroups not its own under its root", n)
			}
		})
	}
}

// TestOwnershipRecord: the record under StateDir is one file per pod
// cgroup, written before the cgroup and removed after; a new manager
// forgets the records of cgroups that are gone; without a StateDir the
// record is in memory only, and a new manager leaves the old one's
// cgroups.
func TestOwnershipRecord(t *testing.T) {
	root, state := fakeV1(t), t.TempDir()
	a := startSide(t, root, nil, cgroups.Options{StateDir: state})
	p, q := pod("p-1", "cpu=100m/"), pod("q-1", "")
	a.ensure(t, p, q)
	recP := filepath.Join(state, "cgroupfs", "kubepods", "burstable", "podp-1")
	recQ := filepath.Join(state, "cgroupfs", "kubepods", "besteffort", "podq-1")
	if !exists(recP) || !exists(recQ) {
		t.Fatal("no record of the pod cgroups made")
	}
	n, _ := a.m.PodName(p)
	if err := a.m.Destroy(n); err != nil {
		t.Fatal(err)
	}
	if exists(recP) {
		t.Error("the record of a destroyed cgroup is left")
	}
	if err := a.m.Destroy(n); err != nil {
		t.Errorf("Destroy of a cgroup already gone: %v", err)
	}
	// q's cgroup gone behind the manager's back (the machine restarted,
	// say); a file that names no cgroup is left alone.
	for _, h := range []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"} {
		if err := os.RemoveAll(filepath.Join(root, h, "kubepods", "besteffort", "podq-1")); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(state, "cgroupfs", "notes_1")
	write(t, stray, "")
	startSide(t, root, nil, cgroups.Options{StateDir: state})
	if exists(recQ) || !exists(stray) {
		t.Errorf("after a restart: the record of a cgroup gone left %v, a stray file removed %v", exists(recQ), !exists(stray))
	}

	// In memory only: a new manager owns nothing.
	root = fakeV2(t)
	m1 := startSide(t, root, nil, cgroups.Options{})
	m1.ensure(t, p)
	m2 := startSide(t, root, nil, cgroups.Options{})
	m2.cleanup(t)
	if !m2.m.PodExists(p) || m2.logs.count("not ours") != 1 {
		t.Errorf("a manager without a StateDir removed its predecessor's cgroup (%v), or did not say so:\n%s", !m2.m.PodExists(p), m2.logs.b.String())
	}
	m1.cleanup(t)
	if m1.m.PodExists(p) {
		t.Error("the manager that made the cgroup did not remove it")
	}
}

// TestOwnershipStateDirUnusable: a StateDir that cannot be read fails
// Start; a record that cannot be written fails EnsurePod before the cgroup
// is made.
func TestOwnershipStateDirUnusable(t *testing.T) {
	root := fakeV1(t)
	file := filepath.Join(t.TempDir(), "file")
	write(t, file, "")
	m, _ := newManager(t, root, cgroups.Options{StateDir: file})
	if err := m.Start(context.Background(), node); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Start with a file for StateDir: %v", err)
	}
	state := t.TempDir()
	m, _ = newManager(t, root, cgroups.Options{StateDir: state})
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(state, "cgroupfs"), "") // where the records go
	p := pod("p-1", "")
	if err := m.EnsurePod(p); err == nil || m.PodExists(p) {
		t.Errorf("EnsurePod without a record: %v, cgroup made %v", err, m.PodExists(p))
	}
}
