package status

import (
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
