package status

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerResources(t *testing.T) {
	q := resource.MustParse
	spec := &v1.Container{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("128Mi")},
	}}
	// What the runtime runs the container with after a resize to 300m/500m
	// and 256Mi.
	resized := &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
		CpuShares: 307, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20,
	}}
	runningAs := func(id string, r *runtimeapi.ContainerResources) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING, Resources: r}
	}
	prev := &v1.ContainerStatus{ContainerID: "cri://c1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		Resources: &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("150m"), v1.ResourceMemory: q("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("96Mi")},
		}}
	cases := []struct {
		name string
		cs   *runtimeapi.ContainerStatus
		old  *v1.ContainerStatus
		want v1.ResourceRequirements
	}{
		{name: "a container not running shows its allocation",
			cs:   &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED, Resources: resized},
			want: spec.Resources},
		{name: "a running one what the runtime reports (the memory request is never reported)", cs: runningAs("c1", resized),
			want: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("300m"), v1.ResourceMemory: q("64Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("256Mi")},
			}},
		{name: "nothing reported keeps what the same running container showed, but the memory request", cs: runningAs("c1", nil), old: prev,
			want: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("150m"), v1.ResourceMemory: q("64Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("96Mi")},
			}},
		{name: "nothing reported for a new instance is the allocation", cs: runningAs("c2", nil), old: prev,
			want: spec.Resources},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := containerResources(spec, tc.cs, tc.old, "cri://"+tc.cs.GetId())
			for _, l := range []struct{ got, want v1.ResourceList }{{got.Requests, tc.want.Requests}, {got.Limits, tc.want.Limits}} {
				assert.Len(t, l.got, len(l.want))
				for name, w := range l.want {
					g := l.got[name]
					assert.Zero(t, w.Cmp(g), "%s: got %s, want %s", name, g.String(), w.String())
				}
			}
		})
	}
}

func TestContainerResourcesSmallestValues(t *testing.T) {
	q := resource.MustParse
	// 1m asks for fewer shares than the smallest (2), and 5m for a quota
	// below the smallest effective limit: the status keeps what was asked.
	spec := &v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("1m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("5m")},
	}}
	cs := &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		Resources: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000}}}
	got := containerResources(spec, cs, nil, "cri://c1")
	assert.Equal(t, "1m", got.Requests.Cpu().String())
	assert.Equal(t, "5m", got.Limits.Cpu().String())
}

// The pod-level status.allocatedResources and status.resources, as
// upstream's InPlacePodLevelResourcesVerticalScaling reports them.
func TestPodLevelResources(t *testing.T) {
	q := resource.MustParse
	rl := func(cpu, memory string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = q(cpu)
		}
		if memory != "" {
			l[v1.ResourceMemory] = q(memory)
		}
		return l
	}
	req := func(reqs, lims v1.ResourceList) *v1.ResourceRequirements {
		return &v1.ResourceRequirements{Requests: reqs, Limits: lims}
	}
	// A pod allocated cpu=2 memory=512Mi at the pod level, its container
	// without resources.
	plr := func(phase v1.PodPhase) *v1.Pod {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("app"))
		p.Spec.Resources = req(rl("2", "512Mi"), rl("2", "512Mi"))
		p.Status.Phase = phase
		return p
	}
	runningOld := &v1.PodStatus{Phase: v1.PodRunning, Resources: req(rl("1", "256Mi"), rl("1", "256Mi"))}
	for _, tc := range []struct {
		name          string
		pod           *v1.Pod
		cgroup        *v1.ResourceRequirements
		old           *v1.PodStatus
		wantAllocated v1.ResourceList
		want          *v1.ResourceRequirements
	}{
		{name: "not running: as allocated", pod: plr(v1.PodPending), cgroup: req(rl("1", ""), rl("1", "256Mi")),
			wantAllocated: rl("2", "512Mi"), want: req(rl("2", "512Mi"), rl("2", "512Mi"))},
		{name: "running: what the pod's cgroup has", pod: plr(v1.PodRunning), cgroup: req(rl("1", ""), rl("1", "256Mi")),
			wantAllocated: rl("2", "512Mi"), want: req(rl("1", "512Mi"), rl("1", "256Mi"))},
		{name: "running, resized", pod: plr(v1.PodRunning), cgroup: req(rl("2", ""), rl("2", "512Mi")),
			wantAllocated: rl("2", "512Mi"), want: req(rl("2", "512Mi"), rl("2", "512Mi"))},
		{name: "running, cgroup not read: the previous status stands", pod: plr(v1.PodRunning), old: runningOld,
			wantAllocated: rl("2", "512Mi"), want: req(rl("1", "256Mi"), rl("1", "256Mi"))},
		{name: "running, a CPU request at the smallest shares reads as allocated", pod: func() *v1.Pod {
			p := plr(v1.PodRunning)
			p.Spec.Resources = req(rl("1m", "512Mi"), nil)
			return p
		}(), cgroup: req(rl("2m", ""), nil), wantAllocated: rl("1m", "512Mi"), want: req(rl("1m", "512Mi"), v1.ResourceList{})},
		{name: "without pod-level resources: the containers' summed", pod: func() *v1.Pod {
			p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"), ctr("b"))
			p.Spec.Containers[0].Resources = *req(rl("100m", "64Mi"), rl("200m", "128Mi"))
			p.Spec.Containers[1].Resources = *req(rl("300m", ""), nil)
			return p
		}(), wantAllocated: rl("400m", "64Mi"), want: req(rl("400m", "64Mi"), rl("200m", "128Mi"))},
		{name: "best effort", pod: mkPod(v1.RestartPolicyAlways, nil, ctr("a")),
			want: req(v1.ResourceList{}, v1.ResourceList{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old
			if old == nil {
				old = &v1.PodStatus{}
			}
			s, err := Generate(Input{Pod: tc.pod, Old: old, PodCgroup: tc.cgroup, Now: at(1)})
			if err != nil {
				t.Fatal(err)
			}
			assert.Equal(t, format(tc.wantAllocated), format(s.AllocatedResources), "allocatedResources")
			if assert.NotNil(t, s.Resources) {
				assert.Equal(t, format(tc.want.Requests), format(s.Resources.Requests), "resources.requests")
				assert.Equal(t, format(tc.want.Limits), format(s.Resources.Limits), "resources.limits")
			}
		})
	}
}

// format prints a resource list in name order, nil as "<nil>".
func format(l v1.ResourceList) string {
	if l == nil {
		return "<nil>"
	}
	var out []string
	for name, v := range l {
		out = append(out, string(name)+"="+v.String())
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
