package volume

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMemoryVolumeSize(t *testing.T) {
	limits := func(mem string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(mem)}}
	}
	always := v1.ContainerRestartPolicyAlways
	q := func(s string) *resource.Quantity { r := resource.MustParse(s); return &r }
	for _, tc := range []struct {
		name   string
		pod    v1.PodSpec
		limit  *resource.Quantity
		alloc  v1.ResourceList
		want   int64
		wantOK bool
	}{
		{name: "nothing known", pod: v1.PodSpec{Containers: []v1.Container{{}}}},
		{name: "sizeLimit", pod: v1.PodSpec{Containers: []v1.Container{{}}}, limit: q("64Mi"), want: 64 << 20, wantOK: true},
		{name: "pod limit is smaller", pod: v1.PodSpec{Containers: []v1.Container{{Resources: limits("16Mi")}, {Resources: limits("16Mi")}}},
			limit: q("64Mi"), want: 32 << 20, wantOK: true},
		{name: "one container without limit", pod: v1.PodSpec{Containers: []v1.Container{{Resources: limits("16Mi")}, {}}},
			limit: q("64Mi"), want: 64 << 20, wantOK: true},
		{name: "init container larger, sidecar added", pod: v1.PodSpec{
			InitContainers: []v1.Container{{Resources: limits("100Mi")}, {Resources: limits("8Mi"), RestartPolicy: &always}},
			Containers:     []v1.Container{{Resources: limits("16Mi")}}},
			want: 100 << 20, wantOK: true},
		{name: "pod-level limit, a container without one", pod: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("48Mi")}},
			Containers: []v1.Container{{Resources: limits("16Mi")}, {}}}, limit: q("64Mi"), want: 48 << 20, wantOK: true},
		{name: "pod-level limit over the containers'", pod: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("24Mi")}},
			Containers: []v1.Container{{Resources: limits("16Mi")}, {Resources: limits("16Mi")}}}, want: 24 << 20, wantOK: true},
		{name: "pod-level CPU alone: the containers' sum", pod: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
			Containers: []v1.Container{{Resources: limits("16Mi")}}}, want: 16 << 20, wantOK: true},
		{name: "node allocatable", pod: v1.PodSpec{Containers: []v1.Container{{}}}, alloc: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			want: 1 << 30, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := memoryVolumeSize(&v1.Pod{Spec: tc.pod}, tc.limit, tc.alloc)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
