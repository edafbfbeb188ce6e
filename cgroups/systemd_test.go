package cgroups_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// call is one call a fakeSystemd received.
type call struct {
	op, unit string
	props    []cgroups.SystemdProperty
}

func (c call) String() string { return fmt.Sprintf("%s %s %v", c.op, c.unit, c.props) }

// fakeSystemd records the calls of the systemd driver and keeps which
// units are started.
type fakeSystemd struct {
	mu      sync.Mutex
	version int
	units   map[string]bool
	calls   []call
	// result is the job result of the next StartTransientUnit (or
	// StopUnit), "done" when empty; failVersion fails Version.
	result      string
	failVersion error
}

func newFakeSystemd(version int) *fakeSystemd {
	return &fakeSystemd{version: version, units: map[string]bool{}}
}

func (f *fakeSystemd) record(op, unit string, props []cgroups.SystemdProperty) {
	f.calls = append(f.calls, call{op, unit, props})
}

func (f *fakeSystemd) jobResult() string {
	r := f.result
	f.result = ""
	if r == "" {
		return "done"
	}
	return r
}

func (f *fakeSystemd) StartTransientUnit(_ context.Context, name string, props []cgroups.SystemdProperty) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("start", name, props)
	if f.units[name] {
		return "", fmt.Errorf("unit %s: %w", name, cgroups.ErrUnitExists)
	}
	r := f.jobResult()
	if r == "done" {
		f.units[name] = true
	}
	return r, nil
}

func (f *fakeSystemd) SetUnitProperties(_ context.Context, name string, props []cgroups.SystemdProperty) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("set", name, props)
	if !f.units[name] {
		return fmt.Errorf("unit %s: %w", name, cgroups.ErrNoSuchUnit)
	}
	return nil
}

func (f *fakeSystemd) StopUnit(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("stop", name, nil)
	if !f.units[name] {
		return "", fmt.Errorf("unit %s: %w", name, cgroups.ErrNoSuchUnit)
	}
	delete(f.units, name)
	return f.jobResult(), nil
}

func (f *fakeSystemd) ResetFailedUnit(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("reset-failed", name, nil)
	return nil
}

func (f *fakeSystemd) Version(context.Context) (int, error) {
	if f.failVersion != nil {
		return 0, f.failVersion
	}
	return f.version, nil
}

// take returns the calls so far and forgets them.
func (f *fakeSystemd) take() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

type props = []cgroups.SystemdProperty

// started are the properties upstream's kubelet starts a slice with.
func started(unit, parent string, v2 bool) props {
	io := "BlockIOAccounting"
	if v2 {
		io = "IOAccounting"
	}
	return props{
		{Name: "Description", Value: "libcontainer container " + unit},
		{Name: "Wants", Value: []string{parent}},
		{Name: "MemoryAccounting", Value: true},
		{Name: "CPUAccounting", Value: true},
		{Name: io, Value: true},
		{Name: "TasksAccounting", Value: true},
		{Name: "DefaultDependencies", Value: false},
	}
}

func equalCalls(t *testing.T, what string, got, want []call) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		var b strings.Builder
		for _, c := range got {
			fmt.Fprintf(&b, "\n\t%v", c)
		}
		b.WriteString("\nwant:")
		for _, c := range want {
			fmt.Fprintf(&b, "\n\t%v", c)
		}
		t.Errorf("%s: calls:%s", what, b.String())
	}
}

func newSystemdManager(t *testing.T, root string, sd *fakeSystemd, opts cgroups.Options) (*cgroups.Manager, *killer) {
	t.Helper()
	opts.Driver, opts.Systemd = cgroups.DriverSystemd, sd
	m, k := newManager(t, root, opts)
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	return m, k
}

// TestSystemdStart: kubepods, burstable and besteffort are slices, started
// with upstream's properties and given their limits as properties and in
// their files, on either cgroup version.
func TestSystemdStart(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			root := fakeV1(t)
			memory, shares := "MemoryLimit", props{{Name: "CPUShares", Value: uint64(2048)}}
			files := map[string]string{
				"cpu,cpuacct/kubepods.slice/cpu.shares":                           "2048",
				"memory/kubepods.slice/memory.limit_in_bytes":                     "4294967296",
				"pids/kubepods.slice/pids.max":                                    "1000",
				"cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice/cpu.shares": "2",
				"cpuset/kubepods.slice/kubepods-burstable.slice/cpuset.cpus":      "0-1",
				"systemd/kubepods.slice/kubepods-burstable.slice":                 "<none>", // a directory
			}
			besteffort := props{{Name: "CPUShares", Value: uint64(2)}}
			if v2 {
				root = fakeV2(t)
				memory, shares = "MemoryMax", props{{Name: "CPUWeight", Value: uint64(79)}}
				files = map[string]string{
					"kubepods.slice/cpu.weight":                           "79",
					"kubepods.slice/memory.max":                           "4294967296",
					"kubepods.slice/pids.max":                             "1000",
					"kubepods.slice/kubepods-besteffort.slice/cpu.weight": "1",
					"kubepods.slice/cgroup.subtree_control":               "+cpu +cpuset +memory +pids",
				}
				besteffort = props{{Name: "CPUWeight", Value: uint64(1)}}
			}
			sd := newFakeSystemd(252)
			m, _ := newSystemdManager(t, root, sd, cgroups.Options{})
			if want := map[bool]int{false: 1, true: 2}[v2]; m.Version() != want {
				t.Fatalf("Version = %d, want %d", m.Version(), want)
			}
			equalCalls(t, "Start", sd.take(), []call{
				{"start", "kubepods.slice", started("kubepods.slice", "-.slice", v2)},
				{"set", "kubepods.slice", append(props{{Name: memory, Value: uint64(4294967296)}}, append(shares, cgroups.SystemdProperty{Name: "TasksMax", Value: uint64(1000)})...)},
				{"start", "kubepods-burstable.slice", started("kubepods-burstable.slice", "kubepods.slice", v2)},
				{"start", "kubepods-besteffort.slice", started("kubepods-besteffort.slice", "kubepods.slice", v2)},
				{"set", "kubepods-besteffort.slice", besteffort},
			})
			for f, want := range files {
				if got := read(t, filepath.Join(root, f)); got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
				if !exists(filepath.Join(root, f)) {
					t.Errorf("%s missing", f)
				}
			}
			// Started again: the slices exist, only their limits are set.
			if err := m.Start(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			for _, c := range sd.take() {
				if c.op != "set" {
					t.Errorf("second Start: %v", c)
				}
			}
		})
	}
}

// TestSystemdPods: a pod's slice per QoS class and cgroup version, with
// the properties upstream's kubelet gives it through libcontainer.
func TestSystemdPods(t *testing.T) {
	maxU := uint64(math.MaxUint64)
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		opts        cgroups.PodOptions
		version     int // systemd's; 252 when 0
		unit, wants string
		v1, v2      props
		v1files     map[string]string // under cpu,cpuacct or memory
		v2files     map[string]string
	}{
		{
			name: "guaranteed", pod: pod("g-1", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi"), opts: cgroups.PodOptions{PidsLimit: 100},
			unit: "kubepods-podg_1.slice", wants: "kubepods.slice",
			v1: props{{Name: "MemoryLimit", Value: uint64(67108864)}, {Name: "CPUShares", Value: uint64(512)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(500000)}, {Name: "TasksMax", Value: uint64(100)}},
			v2: props{{Name: "MemoryMax", Value: uint64(67108864)}, {Name: "CPUWeight", Value: uint64(20)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(500000)}, {Name: "TasksMax", Value: uint64(100)}},
			v1files: map[string]string{"cpu.shares": "512", "cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "memory.limit_in_bytes": "67108864"},
			v2files: map[string]string{"cpu.weight": "20", "cpu.max": "50000 100000", "memory.max": "67108864", "pids.max": "100"},
		},
		{
			// 15m of a CPU: 1.5% a second, which systemd keeps as a
			// whole percentage: rounded up; the file has the quota.
			name: "guaranteed, a fraction of a percent", pod: pod("g-2", "cpu=15m,memory=8Mi/cpu=15m,memory=8Mi"),
			unit: "kubepods-podg_2.slice", wants: "kubepods.slice",
			v1: props{{Name: "MemoryLimit", Value: uint64(8388608)}, {Name: "CPUShares", Value: uint64(15)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(20000)}},
			v2: props{{Name: "MemoryMax", Value: uint64(8388608)}, {Name: "CPUWeight", Value: uint64(1)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(20000)}},
			v1files: map[string]string{"cpu.cfs_quota_us": "1500"},
			v2files: map[string]string{"cpu.max": "1500 100000"},
		},
		{
			// systemd before 242 has no CPUQuotaPeriodUSec; the file
			// has the period still.
			name: "guaranteed, systemd 241", pod: pod("g-3", "cpu=1,memory=8Mi/cpu=1,memory=8Mi"), version: 241,
			unit: "kubepods-podg_3.slice", wants: "kubepods.slice",
			v1: props{{Name: "MemoryLimit", Value: uint64(8388608)}, {Name: "CPUShares", Value: uint64(1024)},
				{Name: "CPUQuotaPerSecUSec", Value: uint64(1000000)}},
			v2: props{{Name: "MemoryMax", Value: uint64(8388608)}, {Name: "CPUWeight", Value: uint64(39)},
				{Name: "CPUQuotaPerSecUSec", Value: uint64(1000000)}},
			v1files: map[string]string{"cpu.cfs_period_us": "100000"},
			v2files: map[string]string{"cpu.max": "100000 100000"},
		},
		{
			name: "guaranteed, CPU quota off", pod: pod("g-4", "cpu=1,memory=8Mi/cpu=1,memory=8Mi"), opts: cgroups.PodOptions{DisableCPUQuota: true},
			unit: "kubepods-podg_4.slice", wants: "kubepods.slice",
			v1: props{{Name: "MemoryLimit", Value: uint64(8388608)}, {Name: "CPUShares", Value: uint64(1024)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: maxU}},
			v2: props{{Name: "MemoryMax", Value: uint64(8388608)}, {Name: "CPUWeight", Value: uint64(39)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: maxU}},
			v1files: map[string]string{"cpu.cfs_quota_us": "-1"},
			v2files: map[string]string{"cpu.max": "max 100000"},
		},
		{
			name: "burstable, CPU limited", pod: pod("b-1", "cpu=250m/cpu=1"),
			unit: "kubepods-burstable-podb_1.slice", wants: "kubepods-burstable.slice",
			v1: props{{Name: "CPUShares", Value: uint64(256)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(1000000)}},
			v2: props{{Name: "CPUWeight", Value: uint64(10)},
				{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(1000000)}},
			v1files: map[string]string{"cpu.shares": "256", "cpu.cfs_quota_us": "100000", "memory.limit_in_bytes": "<none>"},
			v2files: map[string]string{"cpu.weight": "10", "cpu.max": "100000 100000", "memory.max": "<none>"},
		},
		{
			name: "burstable, memory limited", pod: pod("b-2", "cpu=100m/memory=1Gi"),
			unit: "kubepods-burstable-podb_2.slice", wants: "kubepods-burstable.slice",
			v1:      props{{Name: "MemoryLimit", Value: uint64(1073741824)}, {Name: "CPUShares", Value: uint64(102)}},
			v2:      props{{Name: "MemoryMax", Value: uint64(1073741824)}, {Name: "CPUWeight", Value: uint64(4)}},
			v1files: map[string]string{"cpu.shares": "102", "cpu.cfs_quota_us": "<none>", "memory.limit_in_bytes": "1073741824"},
			v2files: map[string]string{"cpu.weight": "4", "cpu.max": "<none>", "memory.max": "1073741824"},
		},
		{
			name: "besteffort", pod: pod("e-1", ""),
			unit: "kubepods-besteffort-pode_1.slice", wants: "kubepods-besteffort.slice",
			v1:      props{{Name: "CPUShares", Value: uint64(2)}},
			v2:      props{{Name: "CPUWeight", Value: uint64(1)}},
			v1files: map[string]string{"cpu.shares": "2", "cpu.cfs_quota_us": "<none>", "memory.limit_in_bytes": "<none>"},
			v2files: map[string]string{"cpu.weight": "1", "cpu.max": "<none>", "memory.max": "<none>"},
		},
	} {
		for _, v2 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/v2=%v", tc.name, v2), func(t *testing.T) {
				root := fakeV1(t)
				if v2 {
					root = fakeV2(t)
				}
				version := tc.version
				if version == 0 {
					version = 252
				}
				sd := newFakeSystemd(version)
				m, _ := newSystemdManager(t, root, sd, cgroups.Options{Pod: tc.opts})
				sd.take()
				if err := m.EnsurePod(tc.pod); err != nil {
					t.Fatal(err)
				}
				want := tc.v1
				if v2 {
					want = tc.v2
				}
				equalCalls(t, "EnsurePod", sd.take(), []call{
					{"start", tc.unit, started(tc.unit, tc.wants, v2)},
					{"set", tc.unit, want},
				})
				parent, err := m.CgroupParent(tc.pod)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(parent, "/"+tc.wants+"/"+tc.unit) {
					t.Errorf("CgroupParent = %q, want it to end in %s/%s", parent, tc.wants, tc.unit)
				}
				if !m.PodExists(tc.pod) {
					t.Error("no pod cgroup after EnsurePod")
				}
				files := tc.v1files
				if v2 {
					files = tc.v2files
				}
				for f, want := range files {
					dir := root
					switch {
					case v2:
					case strings.HasPrefix(f, "memory."):
						dir = filepath.Join(root, "memory")
					default:
						dir = filepath.Join(root, "cpu,cpuacct")
					}
					if got := read(t, filepath.Join(dir, parent, f)); got != want {
						t.Errorf("%s = %q, want %q", f, got, want)
					}
				}
				// An existing pod cgroup is left as it is.
				if err := m.EnsurePod(tc.pod); err != nil || len(sd.take()) != 0 {
					t.Errorf("EnsurePod of an existing pod cgroup: %v, or it called systemd", err)
				}
			})
		}
	}
}

// TestSystemdDestroy: a pod slice's processes are killed, its unit stopped
// and reset, its directories removed; orphans are found by their slice
// names.
func TestSystemdDestroy(t *testing.T) {
	root := fakeV1(t)
	sd := newFakeSystemd(252)
	m, k := newSystemdManager(t, root, sd, cgroups.Options{})
	g, b, e := pod("g-1", "cpu=1,memory=1Gi/cpu=1,memory=1Gi"), pod("b-1", "cpu=1/"), pod("e-1", "")
	for _, p := range []*v1.Pod{g, b, e} {
		if err := m.EnsurePod(p); err != nil {
			t.Fatal(err)
		}
	}
	// Strays under the QoS slices: not this driver's names for a pod.
	for _, d := range []string{"kubepods-burstable-pod.slice", "kubepods-besteffort-podz.slice", "other-podz.slice", "kubepods-burstable-podq"} {
		if err := os.Mkdir(filepath.Join(root, "memory/kubepods.slice/kubepods-burstable.slice", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sd.take()
	found, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]string{
		"g-1": "/kubepods.slice/kubepods-podg_1.slice",
		"b-1": "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_1.slice",
		"e-1": "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode_1.slice",
	}
	if len(found) != len(want) {
		t.Fatalf("Pods = %v", found)
	}
	for uid, n := range found {
		if n.Systemd() != want[uid] {
			t.Errorf("Pods[%s] = %s, want %s", uid, n.Systemd(), want[uid])
		}
	}
	if paths, err := m.PodCgroups(); err != nil || !maps.Equal(paths, want) {
		t.Errorf("PodCgroups = %v, %v; want the systemd driver's paths %v", paths, err, want)
	}

	bSlice := filepath.Join(root, "cpu,cpuacct", want["b-1"])
	if err := os.Mkdir(filepath.Join(bSlice, "cri-containerd-c1.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(bSlice, "cri-containerd-c1.scope", "cgroup.procs"), "4242\n")
	m.CleanupOrphans(found, func(uid types.UID) bool { return uid == "g-1" }, func(uid types.UID) bool { return uid == "e-1" })
	if !slices.Equal(k.pids, []int{4242}) {
		t.Errorf("killed %v, want [4242]", k.pids)
	}
	got := sd.take()
	slices.SortStableFunc(got, func(a, b call) int { return strings.Compare(a.unit, b.unit) }) // pods in any order
	equalCalls(t, "CleanupOrphans", got, []call{
		{"set", "kubepods-besteffort-pode_1.slice", props{{Name: "CPUShares", Value: uint64(2)}}},
		{"stop", "kubepods-burstable-podb_1.slice", nil},
		{"reset-failed", "kubepods-burstable-podb_1.slice", nil},
	})
	for _, h := range []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"} {
		if exists(filepath.Join(root, h, want["b-1"])) {
			t.Errorf("%s: the orphan's slice directory is left", h)
		}
	}
	if m.PodExists(b) || !m.PodExists(g) || !m.PodExists(e) {
		t.Error("CleanupOrphans removed the wrong pod cgroups")
	}

	// A unit systemd no longer knows (stopped behind the kubelet's back):
	// the directories go all the same.
	n, _ := m.PodName(g)
	delete(sd.units, "kubepods-podg_1.slice")
	if err := m.Destroy(n); err != nil {
		t.Fatalf("Destroy of a unit systemd does not know: %v", err)
	}
	if m.PodExists(g) {
		t.Error("the slice directories are left")
	}
	// A stop job that does not complete: noted, the directories removed.
	n, _ = m.PodName(e)
	sd.result = "failed"
	if err := m.Destroy(n); err != nil || m.PodExists(e) {
		t.Errorf("Destroy with a failed stop job: %v", err)
	}
}

// TestSystemdErrors: a start job that fails fails the cgroup (the unit
// reset); a unit that exists is reused; systemd that cannot be reached
// fails Start with ErrSystemdDriver.
func TestSystemdErrors(t *testing.T) {
	root := fakeV2(t)
	sd := newFakeSystemd(252)
	m, _ := newSystemdManager(t, root, sd, cgroups.Options{})
	p := pod("u-1", "")
	sd.take()
	sd.result = "failed"
	if err := m.EnsurePod(p); err == nil || !strings.Contains(err.Error(), "job failed") {
		t.Fatalf("EnsurePod with a failed job: %v", err)
	}
	unit := "kubepods-besteffort-podu_1.slice"
	equalCalls(t, "failed job", sd.take(), []call{
		{"start", unit, started(unit, "kubepods-besteffort.slice", true)},
		{"reset-failed", unit, nil},
	})
	if m.PodExists(p) {
		t.Error("a pod cgroup after a failed job")
	}
	// The unit was started by someone (a kubelet before a restart that
	// lost the directories): the properties are set on it.
	sd.units[unit] = true
	if err := m.EnsurePod(p); err != nil {
		t.Fatalf("EnsurePod of a unit that exists: %v", err)
	}
	if c := sd.take(); len(c) != 2 || c[1].op != "set" {
		t.Errorf("calls: %v", c)
	}

	sd = newFakeSystemd(252)
	sd.failVersion = errors.New("connection refused")
	m2, _ := newManager(t, fakeV1(t), cgroups.Options{Driver: cgroups.DriverSystemd, Systemd: sd})
	if err := m2.Start(context.Background(), node); !errors.Is(err, cgroups.ErrSystemdDriver) {
		t.Errorf("Start with systemd unreachable: %v", err)
	}
	if err := m2.EnsurePod(p); !errors.Is(err, cgroups.ErrNotStarted) {
		t.Errorf("EnsurePod after a failed Start: %v", err)
	}
	if err := m2.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestSystemdResize: an in-place resize sets the pod slice's properties
// as well as its files (systemd would put its own values back otherwise).
func TestSystemdResize(t *testing.T) {
	root := fakeV1(t)
	sd := newFakeSystemd(252)
	m, _ := newSystemdManager(t, root, sd, cgroups.Options{})
	if err := m.EnsurePod(pod("g-1", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi")); err != nil {
		t.Fatal(err)
	}
	sd.take()
	if err := m.ResizePod(pod("g-1", "cpu=1,memory=128Mi/cpu=1,memory=128Mi"), true); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, "ResizePod", sd.take(), []call{{"set", "kubepods-podg_1.slice", props{
		{Name: "MemoryLimit", Value: uint64(134217728)}, {Name: "CPUShares", Value: uint64(1024)},
		{Name: "CPUQuotaPeriodUSec", Value: uint64(100000)}, {Name: "CPUQuotaPerSecUSec", Value: uint64(1000000)}}}})
	if got := read(t, filepath.Join(root, "cpu,cpuacct/kubepods.slice/kubepods-podg_1.slice/cpu.cfs_quota_us")); got != "100000" {
		t.Errorf("cpu.cfs_quota_us = %s after the resize", got)
	}
}

func TestParseSystemdVersion(t *testing.T) {
	for in, want := range map[string]int{"252.38-1~deb12u1": 252, `"v245.4-1.fc32"`: 245, "245": 245, "v239": 239} {
		if got, err := cgroups.ParseSystemdVersion(in); err != nil || got != want {
			t.Errorf("ParseSystemdVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "systemd", "v"} {
		if _, err := cgroups.ParseSystemdVersion(in); err == nil {
			t.Errorf("ParseSystemdVersion(%q) succeeded", in)
		}
	}
}
