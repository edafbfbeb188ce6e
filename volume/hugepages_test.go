package volume_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/volume"
)

// An emptyDir of medium HugePages or HugePages-<size> is a hugetlbfs of
// the page size the pod's huge page requests give, as upstream mounts it,
// with upstream's errors when the pod asks none, or several sizes for
// "HugePages"; it is unmounted with the pod.
func TestEmptyDirHugePages(t *testing.T) {
	hugePod := func(name string, medium v1.StorageMedium, requests ...string) *v1.Pod {
		p := newPod(name, v1.Volume{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}})
		r := v1.ResourceList{}
		for _, name := range requests {
			r[v1.ResourceName(name)] = resource.MustParse("4Mi")
		}
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: r, Limits: r}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		option  string
		message string
	}{
		{name: "HugePages-2Mi", pod: hugePod("a", "HugePages-2Mi", "hugepages-2Mi"), option: "pagesize=2Mi"},
		{name: "HugePages with one size", pod: hugePod("b", "HugePages", "hugepages-1Gi"), option: "pagesize=1Gi"},
		{name: "HugePages-2Mi beside another size", pod: hugePod("c", "HugePages-2Mi", "hugepages-2Mi", "hugepages-1Gi"), option: "pagesize=2Mi"},
		{name: "HugePages with two sizes", pod: hugePod("d", "HugePages", "hugepages-2Mi", "hugepages-1Gi"),
			message: `MountVolume.SetUp failed for volume "huge" : medium: HugePages can't be used if container requests multiple huge page sizes`},
		{name: "HugePages-2Mi without its request", pod: hugePod("e", "HugePages-2Mi", "hugepages-1Gi"),
			message: `MountVolume.SetUp failed for volume "huge" : medium HugePages-2Mi: hugePages storage requested, but there is no resource request for huge pages`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil).run()
			if tc.message != "" {
				require.Error(t, h.failMount(tc.pod))
				assert.Equal(t, tc.message, h.rec.Events()[0].Message)
				assert.Empty(t, h.mnt.Mounted())
				return
			}
			require.NoError(t, h.mount(tc.pod))
			dir := h.volDir(tc.pod, volume.EmptyDirPluginName, "huge")
			mounted := h.mnt.Mounted()
			require.Contains(t, mounted, dir)
			assert.Equal(t, "hugetlbfs", mounted[dir].FSType)
			assert.Equal(t, "nodev", mounted[dir].Source)
			assert.Equal(t, []string{tc.option}, mounted[dir].Options)
			require.NoError(t, h.unmount(tc.pod))
			assert.Empty(t, h.mnt.Mounted(), "hugetlbfs unmounted")
		})
	}
}
