package containerconfig_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// hugeLimits is a container's limits with huge pages (pairs of size and
// amount) and the cpu that must come with them.
func hugeLimits(pairs ...string) v1.ResourceList {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[v1.ResourceName("hugepages-"+pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func TestHugepageLimits(t *testing.T) {
	const mi, gi = uint64(1 << 20), uint64(1 << 30)
	both := []string{"1GB", "2MB"}
	for _, tc := range []struct {
		name      string
		sizes     []string
		podLimits v1.ResourceList // pod-level, nil: none
		limits    v1.ResourceList // the container's
		want      map[string]uint64
	}{
		{name: "no sizes on the node: none sent", limits: hugeLimits("2Mi", "4Mi")},
		{name: "none asked: 0 for every size", sizes: both, want: map[string]uint64{"1GB": 0, "2MB": 0}},
		{name: "the container's 2Mi", sizes: both, limits: hugeLimits("2Mi", "4Mi"),
			want: map[string]uint64{"1GB": 0, "2MB": 4 * mi}},
		{name: "the container's 2Mi and 1Gi", sizes: both, limits: hugeLimits("2Mi", "6Mi", "1Gi", "2Gi"),
			want: map[string]uint64{"1GB": 2 * gi, "2MB": 6 * mi}},
		{name: "a size the node lacks is left out", sizes: []string{"2MB"}, limits: hugeLimits("1Gi", "1Gi"),
			want: map[string]uint64{"2MB": 0}},
		{name: "pod-level: the pod's where the container has none", sizes: both,
			podLimits: hugeLimits("2Mi", "8Mi", "1Gi", "1Gi"), limits: hugeLimits("2Mi", "2Mi"),
			want: map[string]uint64{"1GB": gi, "2MB": 2 * mi}},
		{name: "pod-level: a container without limits gets the pod's", sizes: both,
			podLimits: hugeLimits("2Mi", "8Mi"),
			want:      map[string]uint64{"1GB": 0, "2MB": 8 * mi}},
		{name: "pod-level without huge pages", sizes: both, podLimits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			limits: hugeLimits("2Mi", "2Mi"), want: map[string]uint64{"1GB": 0, "2MB": 2 * mi}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, v1.Container{Name: "app", Image: "busybox", Resources: v1.ResourceRequirements{Limits: tc.limits}})
			if tc.podLimits != nil {
				pod.Spec.Resources = &v1.ResourceRequirements{Limits: tc.podLimits}
			}
			got := containerconfig.HugepageLimits(pod, &pod.Spec.Containers[0], tc.sizes)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.Len(t, got, len(tc.sizes), "one for each size")
			m := map[string]uint64{}
			for i, l := range got {
				assert.Equal(t, tc.sizes[i], l.GetPageSize(), "in the sizes' order")
				m[l.GetPageSize()] = l.GetLimit()
			}
			assert.Equal(t, tc.want, m)
		})
	}
}

// The builder's container config carries them.
func TestContainerConfigHugepageLimits(t *testing.T) {
	pod := newPod("", nil, v1.Container{Name: "app", Image: "busybox", Resources: v1.ResourceRequirements{Limits: hugeLimits("2Mi", "4Mi")}})
	cfg, err := containerConfig(newBuilder(t, containerconfig.Options{HugePageSizes: []string{"1GB", "2MB"}}), pod)
	require.NoError(t, err)
	assert.Equal(t, []*runtimeapi.HugepageLimit{{PageSize: "1GB", Limit: 0}, {PageSize: "2MB", Limit: 4 << 20}},
		cfg.GetLinux().GetResources().GetHugepageLimits())
}

func TestHugePageSizes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity v1.ResourceList
		want     []string
	}{
		{name: "none", capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}, want: []string{}},
		{name: "2Mi and 1Gi, as the kernel's directory lists them",
			capacity: v1.ResourceList{"hugepages-2Mi": resource.MustParse("0"), "hugepages-1Gi": resource.MustParse("2Gi"), v1.ResourceMemory: resource.MustParse("8Gi")},
			want:     []string{"1GB", "2MB"}},
		{name: "arm64's", capacity: v1.ResourceList{"hugepages-64Ki": {}, "hugepages-2Mi": {}, "hugepages-32Mi": {}, "hugepages-1Gi": {}},
			want: []string{"1GB", "2MB", "32MB", "64KB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, containerconfig.HugePageSizes(tc.capacity))
		})
	}
}
