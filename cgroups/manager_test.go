package cgroups_test

import (
	"context"
	"errors"
	"maps"
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

// killer records the processes a manager kills.
type killer struct {
	mu   sync.Mutex
	pids []int
}

func (k *killer) kill(pid int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pids = append(k.pids, pid)
	return nil
}

func newManager(t *testing.T, root string, opts cgroups.Options) (*cgroups.Manager, *killer) {
	t.Helper()
	k := &killer{}
	opts.Root, opts.Kill, opts.Remove = root, k.kill, os.RemoveAll
	m, err := cgroups.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, k
}

var node = cgroups.NodeConfig(list("cpu=2,memory=4Gi,pid=1000"))

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts cgroups.Options
		want error
	}{
		{"unknown driver", cgroups.Options{Driver: "lxcfs"}, cgroups.ErrInvalidOptions},
		{"root with ..", cgroups.Options{CgroupRoot: "/a/../.."}, nil},
		{"root with _", cgroups.Options{CgroupRoot: "/my_root"}, cgroups.ErrInvalidName},
		{"period", cgroups.Options{Pod: cgroups.PodOptions{CPUPeriod: 10}}, cgroups.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cgroups.New(tc.opts)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNotStarted(t *testing.T) {
	m, _ := newManager(t, fakeV1(t), cgroups.Options{})
	if err := m.EnsurePod(pod("u", "")); !errors.Is(err, cgroups.ErrNotStarted) {
		t.Errorf("EnsurePod before Start: %v", err)
	}
	if m.PodExists(pod("u", "")) || m.Version() != 0 {
		t.Error("a manager not started reports cgroups")
	}
}

func TestStartMissingRoot(t *testing.T) {
	m, _ := newManager(t, fakeV1(t), cgroups.Options{CgroupRoot: "/absent"})
	if err := m.Start(context.Background(), node); err == nil {
		t.Fatal("Start under a cgroup root that does not exist succeeded")
	}
	m, _ = newManager(t, t.TempDir(), cgroups.Options{})
	if err := m.Start(context.Background(), node); !errors.Is(err, cgroups.ErrNoCgroups) {
		t.Fatalf("Start on an empty directory: %v", err)
	}
}

func TestV1Hierarchy(t *testing.T) {
	root := fakeV1(t)
	m, k := newManager(t, root, cgroups.Options{})
	ctx := context.Background()
	if err := m.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
	if m.Version() != 1 {
		t.Fatalf("version %d", m.Version())
	}
	cpu, mem := filepath.Join(root, "cpu,cpuacct"), filepath.Join(root, "memory")
	for file, want := range map[string]string{
		filepath.Join(cpu, "kubepods/cpu.shares"):                    "2048",
		filepath.Join(mem, "kubepods/memory.limit_in_bytes"):         "4294967296",
		filepath.Join(root, "pids/kubepods/pids.max"):                "1000",
		filepath.Join(cpu, "kubepods/besteffort/cpu.shares"):         "2",
		filepath.Join(cpu, "kubepods/burstable/cpu.shares"):          "<none>",
		filepath.Join(root, "cpuset/kubepods/burstable/cpuset.cpus"): "0-1",
		filepath.Join(root, "cpuset/kubepods/cpuset.mems"):           "0",
	} {
		if got := read(t, file); got != want {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(file, root), got, want)
		}
	}
	if !exists(filepath.Join(root, "unified", "kubepods")) || !exists(filepath.Join(root, "systemd", "kubepods")) {
		t.Error("kubepods not in the hybrid unified hierarchy, or not in the named systemd one")
	}

	g := pod("g-1", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi")
	b := pod("b-1", "cpu=250m/cpu=1")
	e := pod("e-1", "")
	for _, tc := range []struct {
		pod    *v1.Pod
		parent string
		files  map[string]string
	}{
		{g, "/kubepods/podg-1", map[string]string{"cpu.shares": "512", "cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "memory.limit_in_bytes": "67108864"}},
		{b, "/kubepods/burstable/podb-1", map[string]string{"cpu.shares": "256", "cpu.cfs_quota_us": "100000", "memory.limit_in_bytes": "<none>"}},
		{e, "/kubepods/besteffort/pode-1", map[string]string{"cpu.shares": "2", "cpu.cfs_quota_us": "<none>", "memory.limit_in_bytes": "<none>"}},
	} {
		t.Run(string(tc.pod.UID), func(t *testing.T) {
			if m.PodExists(tc.pod) {
				t.Fatal("exists before EnsurePod")
			}
			if err := m.EnsurePod(tc.pod); err != nil {
				t.Fatal(err)
			}
			if !m.PodExists(tc.pod) {
				t.Fatal("does not exist after EnsurePod")
			}
			parent, err := m.CgroupParent(tc.pod)
			if err != nil || parent != tc.parent {
				t.Fatalf("CgroupParent = %q, %v; want %q", parent, err, tc.parent)
			}
			for f, want := range tc.files {
				dir := cpu
				if strings.HasPrefix(f, "memory.") {
					dir = mem
				}
				if got := read(t, filepath.Join(dir, tc.parent, f)); got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
			}
		})
	}

	if err := m.UpdateQOS([]*v1.Pod{g, b, e, pod("b-2", "cpu=1/")}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(cpu, "kubepods/burstable/cpu.shares")); got != "1280" {
		t.Errorf("burstable cpu.shares = %q, want 1280", got)
	}

	pods, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for uid := range pods {
			if !yield(string(uid)) {
				return
			}
		}
	}); !slices.Equal(got, []string{"b-1", "e-1", "g-1"}) {
		t.Errorf("Pods = %v", got)
	}
	wantPaths := map[types.UID]string{"g-1": "/kubepods/podg-1", "b-1": "/kubepods/burstable/podb-1", "e-1": "/kubepods/besteffort/pode-1"}
	if paths, err := m.PodCgroups(); err != nil || !maps.Equal(paths, wantPaths) {
		t.Errorf("PodCgroups = %v, %v; want %v", paths, err, wantPaths)
	}

	// A process left in a container cgroup of the burstable pod is killed
	// before its cgroup goes; the guaranteed pod keeps running, the
	// best-effort one still has volumes.
	cont := filepath.Join(cpu, "kubepods/burstable/podb-1/c1")
	if err := os.Mkdir(cont, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(cont, "cgroup.procs"), "4242\n")
	m.CleanupOrphans(pods, func(uid types.UID) bool { return uid == "g-1" }, func(uid types.UID) bool { return uid == "e-1" })
	if !slices.Equal(k.pids, []int{4242}) {
		t.Errorf("killed %v, want [4242]", k.pids)
	}
	if m.PodExists(b) || exists(filepath.Join(mem, "kubepods/burstable/podb-1")) {
		t.Error("the orphaned burstable pod's cgroup is still there")
	}
	if !m.PodExists(g) || !m.PodExists(e) {
		t.Error("a running pod's or a pod with volumes' cgroup was removed")
	}
	// Started again (a restart of the agent): kubepods is updated.
	if err := m.Start(ctx, cgroups.NodeConfig(list("cpu=1,memory=1Gi"))); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(cpu, "kubepods/cpu.shares")); got != "1024" {
		t.Errorf("kubepods cpu.shares after a second Start = %q", got)
	}
}

func TestV2Hierarchy(t *testing.T) {
	root := fakeV2(t)
	m, _ := newManager(t, root, cgroups.Options{CgroupRoot: "/nodes/n1", Pod: cgroups.PodOptions{PidsLimit: 512}})
	if err := os.MkdirAll(filepath.Join(root, "nodes", "n1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	if m.Version() != 2 {
		t.Fatalf("version %d", m.Version())
	}
	kp := filepath.Join(root, "nodes/n1/kubepods")
	g := pod("g", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi")
	b := pod("b", "cpu=100m/memory=1Gi")
	for _, p := range []*v1.Pod{g, b} {
		if err := m.EnsurePod(p); err != nil {
			t.Fatal(err)
		}
	}
	for file, want := range map[string]string{
		filepath.Join(root, "cgroup.subtree_control"):  "+cpu +cpuset +memory +pids",
		filepath.Join(kp, "cpu.weight"):                "79",
		filepath.Join(kp, "memory.max"):                "4294967296",
		filepath.Join(kp, "pids.max"):                  "1000",
		filepath.Join(kp, "besteffort/cpu.weight"):     "1",
		filepath.Join(kp, "podg/cpu.weight"):           "20",
		filepath.Join(kp, "podg/cpu.max"):              "50000 100000",
		filepath.Join(kp, "podg/memory.max"):           "67108864",
		filepath.Join(kp, "podg/pids.max"):             "512",
		filepath.Join(kp, "burstable/podb/cpu.weight"): "4",
		filepath.Join(kp, "burstable/podb/cpu.max"):    "<none>",
		filepath.Join(kp, "burstable/podb/memory.max"): "1073741824",
	} {
		if got := read(t, file); got != want {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(file, root), got, want)
		}
	}
	if parent, _ := m.CgroupParent(b); parent != "/nodes/n1/kubepods/burstable/podb" {
		t.Errorf("CgroupParent = %q", parent)
	}
	n, _ := m.PodName(g)
	if err := m.Destroy(n); err != nil {
		t.Fatal(err)
	}
	if m.PodExists(g) || exists(filepath.Join(kp, "podg")) {
		t.Error("destroyed pod cgroup still there")
	}
	if err := m.Destroy(n); err != nil {
		t.Errorf("Destroy of a cgroup already gone: %v", err)
	}
}

func TestPodUIDValidated(t *testing.T) {
	root := fakeV1(t)
	m, _ := newManager(t, root, cgroups.Options{})
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"", "../../x", "a/b", "a_b", "..", "a b", "x\x00"} {
		t.Run(uid, func(t *testing.T) {
			p := pod(uid, "")
			if err := m.EnsurePod(p); !errors.Is(err, cgroups.ErrInvalidName) {
				t.Errorf("EnsurePod(%q) = %v, want ErrInvalidName", uid, err)
			}
			if _, err := m.CgroupParent(p); !errors.Is(err, cgroups.ErrInvalidName) {
				t.Errorf("CgroupParent(%q) = %v", uid, err)
			}
		})
	}
	// A stray directory under a QoS cgroup is not taken for a pod.
	if err := os.Mkdir(filepath.Join(root, "memory/kubepods/burstable/pod_x"), 0o755); err != nil {
		t.Fatal(err)
	}
	pods, err := m.Pods()
	if err != nil || len(pods) != 0 {
		t.Errorf("Pods = %v, %v", pods, err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name              cgroups.Name
		cgroupfs, systemd string
	}{
		{cgroups.Name{}, "/", "/"},
		{cgroups.Name{"kubepods"}, "/kubepods", "/kubepods.slice"},
		{cgroups.Name{"kubepods", "burstable", "pod1234-5678"}, "/kubepods/burstable/pod1234-5678",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice"},
	} {
		t.Run(tc.cgroupfs, func(t *testing.T) {
			if got := tc.name.Cgroupfs(); got != tc.cgroupfs {
				t.Errorf("Cgroupfs = %q, want %q", got, tc.cgroupfs)
			}
			if got := tc.name.Systemd(); got != tc.systemd {
				t.Errorf("Systemd = %q, want %q", got, tc.systemd)
			}
			if got := cgroups.ParseCgroupfs(tc.cgroupfs); !slices.Equal(got, tc.name) {
				t.Errorf("ParseCgroupfs = %q", got)
			}
			if got := cgroups.ParseSystemd(tc.systemd); !slices.Equal(got, tc.name) {
				t.Errorf("ParseSystemd = %q", got)
			}
		})
	}
}

type exclusiveCPUs map[string]bool

func (e exclusiveCPUs) PodHasExclusiveCPUs(pod *v1.Pod) bool { return e[string(pod.UID)] }

// A pod that holds exclusive CPUs (a CPU manager's static policy) gets a
// cgroup without a CFS quota, as upstream's DisableCPUQuotaWithExclusiveCPUs;
// the others keep theirs.
func TestExclusiveCPUsLiftQuota(t *testing.T) {
	root := fakeV2(t)
	m, _ := newManager(t, root, cgroups.Options{ExclusiveCPUs: exclusiveCPUs{"x": true}})
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	x := pod("x", "cpu=2,memory=64Mi/cpu=2,memory=64Mi")
	g := pod("g", "cpu=2,memory=64Mi/cpu=2,memory=64Mi")
	for _, p := range []*v1.Pod{x, g} {
		if err := m.EnsurePod(p); err != nil {
			t.Fatal(err)
		}
	}
	kp := filepath.Join(root, "kubepods")
	for file, want := range map[string]string{
		filepath.Join(kp, "podx/cpu.max"): "max 100000",
		filepath.Join(kp, "podg/cpu.max"): "200000 100000",
	} {
		if got := read(t, file); got != want {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(file, root), got, want)
		}
	}
	if _, r := m.SandboxResources(x); r.GetCpuQuota() != -1 {
		t.Errorf("sandbox quota %d, want -1", r.GetCpuQuota())
	}
}
