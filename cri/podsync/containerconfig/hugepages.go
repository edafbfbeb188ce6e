package containerconfig

import (
	"cmp"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// HugepageLimits returns a container's huge page limits, one for each of
// sizes (the page sizes the node's kernel offers, as the CRI spells them:
// "2MB", "1GB"), in their order, as upstream's kubelet sets them: the
// container's own hugepages-<size> limit; with pod-level resources, the
// pod's limit of a size the container does not limit itself; else 0, so
// that a container uses no huge pages of a size it was not given. A limit
// of a size not in sizes is left out. Nil when sizes is empty.
func HugepageLimits(pod *v1.Pod, c *v1.Container, sizes []string) []*runtimeapi.HugepageLimit {
	if len(sizes) == 0 {
		return nil
	}
	limits := map[string]uint64{}
	set := func(l v1.ResourceList) {
		for name, q := range l {
			if size, ok := podspec.HugePageSize(name); ok {
				limits[podspec.HugePageUnitSize(size)] = uint64(q.Value())
			}
		}
	}
	if podspec.HasPodLevelResources(pod) {
		set(pod.Spec.Resources.Limits)
	}
	set(c.Resources.Limits) // the container's own over the pod's
	out := make([]*runtimeapi.HugepageLimit, 0, len(sizes))
	for _, size := range sizes {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: size, Limit: limits[size]})
	}
	return out
}

// HugePageSizes returns the page sizes of the hugepages-<size> resources
// of a node's capacity (status/node.LocalMachine reports one for each size
// of /sys/kernel/mm/hugepages, reserved or not), as the CRI spells them,
// in the order the kernel's directory lists them (hugepages-1048576kB
// before hugepages-2048kB), as upstream's: what Options.HugePageSizes
// takes.
func HugePageSizes(capacity v1.ResourceList) []string {
	var kb []int64
	for name := range capacity {
		if size, ok := podspec.HugePageSize(name); ok && size%1024 == 0 {
			kb = append(kb, size/1024)
		}
	}
	slices.SortFunc(kb, func(a, b int64) int { // as the directory's names sort
		return cmp.Compare(strconv.FormatInt(a, 10)+"kB", strconv.FormatInt(b, 10)+"kB")
	})
	out := make([]string, 0, len(kb))
	for _, k := range kb {
		out = append(out, podspec.HugePageUnitSize(k*1024))
	}
	return out
}
