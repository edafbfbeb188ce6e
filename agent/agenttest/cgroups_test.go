package agenttest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// cgroupV2FS is a directory shaped as a cgroup v2 mount, for
// Cgroups.FS.
func cgroupV2FS(t *testing.T) string {
	t.Helper()
	fs := t.TempDir()
	if err := os.WriteFile(filepath.Join(fs, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fs
}

// waitRunning steps the node until its pod default/name is Running, a
// minute at most.
func waitRunning(t *testing.T, n *agenttest.Node, name string) {
	t.Helper()
	if !n.StepUntil(time.Minute, func() bool { return n.Pod("default", name).Status.Phase == v1.PodRunning }) {
		t.Fatalf("pod not running: %+v", n.Pod("default", name).Status)
	}
}

// Cgroups.PodPidsLimit, upstream's podPidsLimit: a positive value is the
// pids.max of the pod's cgroup, made before its sandbox; 0 and upstream's
// default -1 write none. The cgroup file system is a directory shaped as a
// cgroup v2 mount.
func TestPodPidsLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
		want  string // the pod cgroup's pids.max; "" for no file
	}{
		{"limit", 1024, "1024"},
		{"upstream's default", -1, ""},
		{"zero", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := cgroupV2FS(t)
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
					Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs, PodPidsLimit: tc.limit}}})
				p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
				waitRunning(t, n, "web")
				b, err := os.ReadFile(filepath.Join(fs, "kubepods", "besteffort", "pod"+string(p.UID), "pids.max"))
				if got := strings.TrimSpace(string(b)); got != tc.want || (tc.want == "") != os.IsNotExist(err) {
					t.Errorf("the pod cgroup's pids.max = %q (%v), want %q", got, err, tc.want)
				}
			})
		})
	}
}

// unimplementedRuntimeConfig is a runtime that answers RuntimeConfig
// Unimplemented, as containerd 1.6 does.
type unimplementedRuntimeConfig struct{ agent.FullRuntime }

func (unimplementedRuntimeConfig) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return nil, &cri.Error{Method: "RuntimeConfig", Code: codes.Unimplemented, Message: "unknown method RuntimeConfig for service runtime.v1.RuntimeService"}
}

// The cgroup driver is the runtime's (upstream's KubeletCgroupDriverFromCRI,
// GA since 1.34): a node configured with systemd whose runtime says
// cgroupfs makes its pod cgroups with cgroupfs and names them so as the
// sandboxes' cgroup parent; a runtime that does not implement RuntimeConfig
// leaves the configured driver.
func TestCgroupDriverFromRuntime(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured string
		runtime    func(agent.FullRuntime) agent.Runtime
		wantCalls  int // RuntimeConfig calls reaching the fake
	}{
		{"runtime's cgroupfs over configured systemd", "systemd", nil, 1},
		{"unimplemented: configured cgroupfs", "cgroupfs", func(rt agent.FullRuntime) agent.Runtime { return unimplementedRuntimeConfig{rt} }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := cgroupV2FS(t)
				n := agenttest.NewNode(t, agenttest.Options{Runtime: tc.runtime, Agent: agent.Options{
					Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs, Driver: tc.configured}}})
				p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
				waitRunning(t, n, "web")
				if got := len(n.Runtime().CallsOf(fake.RuntimeConfig)); got != tc.wantCalls {
					t.Errorf("%d RuntimeConfig calls, want %d (as the agent starts)", got, tc.wantCalls)
				}
				if _, err := os.Stat(filepath.Join(fs, "kubepods", "besteffort", "pod"+string(p.UID))); err != nil {
					t.Errorf("the pod cgroup, by cgroupfs: %v", err)
				}
				if got := n.Agent().CgroupDriver(); got != "cgroupfs" {
					t.Errorf("Agent.CgroupDriver() = %q, want cgroupfs, the driver in use", got)
				}
				want := "/kubepods/besteffort/pod" + string(p.UID)
				for _, c := range n.Runtime().CallsOf(fake.RunPodSandbox) {
					if got := c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetLinux().GetCgroupParent(); got != want {
						t.Errorf("sandbox cgroup parent %q, want %q", got, want)
					}
				}
			})
		})
	}
}

// Cgroups.CPUCFSQuotaPeriod, upstream's cpuCFSQuotaPeriod
// (CustomCPUCFSQuotaPeriod): the CFS period of the pod's containers (their
// CRI CpuPeriod, the quota the limit's share of it) and of its cgroup
// (cpu.max); the default is 100ms.
func TestCPUCFSQuotaPeriod(t *testing.T) {
	for _, tc := range []struct {
		name          string
		period        time.Duration
		wantPeriod    int64
		wantQuota     int64
		wantPodCPUMax string
	}{
		{"50ms", 50 * time.Millisecond, 50000, 25000, "25000 50000"},
		{"default", 0, 100000, 50000, "50000 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := cgroupV2FS(t)
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
					Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs, CPUCFSQuotaPeriod: tc.period}}})
				limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}
				p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox",
						Resources: v1.ResourceRequirements{Requests: limits, Limits: limits}}}}})
				waitRunning(t, n, "web")
				creates := n.Runtime().CallsOf(fake.CreateContainer)
				if len(creates) != 1 {
					t.Fatalf("%d CreateContainer calls, want 1", len(creates))
				}
				res := creates[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetLinux().GetResources()
				if res.GetCpuPeriod() != tc.wantPeriod || res.GetCpuQuota() != tc.wantQuota {
					t.Errorf("container CpuPeriod %d, CpuQuota %d; want %d, %d", res.GetCpuPeriod(), res.GetCpuQuota(), tc.wantPeriod, tc.wantQuota)
				}
				b, err := os.ReadFile(filepath.Join(fs, "kubepods", "pod"+string(p.UID), "cpu.max"))
				if got := strings.TrimSpace(string(b)); err != nil || got != tc.wantPodCPUMax {
					t.Errorf("the pod cgroup's cpu.max = %q (%v), want %q", got, err, tc.wantPodCPUMax)
				}
			})
		})
	}
}

// Huge pages in the pod's cgroup, as upstream's: the pod's hugepages-2Mi
// request is its hugetlb.2MB.max, and the node's other size, 1Gi, which
// the pod does not ask for, is limited to 0.
func TestPodCgroupHugePages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := t.TempDir()
		if err := os.WriteFile(filepath.Join(fs, "cgroup.controllers"), []byte("cpu memory pids hugetlb\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs},
			Node: agent.NodeOptions{Machine: nodetest.Machine{Cap: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
				"hugepages-2Mi": resource.MustParse("64Mi"), "hugepages-1Gi": resource.MustParse("2Gi"),
			}}}}})
		huge := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), "hugepages-2Mi": resource.MustParse("8Mi")}
		p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dpdk"}, Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "app", Image: "busybox", Resources: v1.ResourceRequirements{Requests: huge, Limits: huge}}}}})
		if !n.StepUntil(time.Minute, func() bool { return n.Pod("default", "dpdk").Status.Phase == v1.PodRunning }) {
			t.Fatalf("pod not running: %+v", n.Pod("default", "dpdk").Status)
		}
		dir := filepath.Join(fs, "kubepods", "burstable", "pod"+string(p.UID))
		for file, want := range map[string]string{"hugetlb.2MB.max": "8388608", "hugetlb.1GB.max": "0"} {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if got := strings.TrimSpace(string(b)); got != want {
				t.Errorf("the pod cgroup's %s = %q (%v), want %q", file, got, err, want)
			}
		}
	})
}
