package volume

import (
	"errors"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// isHugePagesMedium reports whether an emptyDir medium asks for huge pages:
// "HugePages", or "HugePages-<size>".
func isHugePagesMedium(m v1.StorageMedium) bool {
	return m == v1.StorageMediumHugePages || strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix))
}

// hugePageSizeMountOption is the hugetlbfs mount option ("pagesize=2Mi") of
// an emptyDir of a huge pages medium in pod, as upstream chooses it from the
// huge page requests of the pod (pod-level, containers' and init
// containers'; a request equals its limit for huge pages): medium
// "HugePages" takes the one size they ask, and is refused when they ask
// several; "HugePages-<size>" takes that size, which they must ask. The
// errors are upstream's.
func hugePageSizeMountOption(medium v1.StorageMedium, pod *v1.Pod) (string, error) {
	var want resource.Quantity
	if medium != v1.StorageMediumHugePages {
		q, err := resource.ParseQuantity(strings.TrimPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix)))
		if err != nil {
			return "", fmt.Errorf("unable to parse medium %s: %w", medium, err)
		}
		want = q
	}
	var lists []v1.ResourceList
	if podspec.HasPodLevelResources(pod) {
		lists = append(lists, pod.Spec.Resources.Requests)
	}
	for _, c := range pod.Spec.Containers {
		lists = append(lists, c.Resources.Requests)
	}
	for _, c := range pod.Spec.InitContainers {
		lists = append(lists, c.Resources.Requests)
	}
	var size resource.Quantity
	found := false
	for _, l := range lists {
		for name := range l {
			s, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return "", fmt.Errorf("unable to parse huge page size of %s: %w", name, err)
			}
			switch {
			case medium == v1.StorageMediumHugePages:
				if found && size.Cmp(q) != 0 {
					return "", fmt.Errorf("medium: %s can't be used if container requests multiple huge page sizes", medium)
				}
				size, found = q, true
			case q.Cmp(want) == 0:
				size, found = q, true
			}
		}
	}
	if !found {
		return "", fmt.Errorf("medium %s: hugePages storage requested, but there is no resource request for huge pages", medium)
	}
	return "pagesize=" + size.String(), nil
}

// setUpHugetlbfs mounts a hugetlbfs of the page size the pod asks on dir
// (0777 before the mount) unless one is there already.
func setUpHugetlbfs(m Mounter, dir string, medium v1.StorageMedium, pod *v1.Pod) error {
	if err := makeDir(dir, emptyDirPerm); err != nil {
		return err
	}
	mounted, err := m.IsMountPoint(dir)
	if err != nil {
		return fmt.Errorf("check mount point %s: %w", dir, err)
	}
	if mounted {
		return nil
	}
	opt, err := hugePageSizeMountOption(medium, pod)
	if err != nil {
		return err
	}
	if err := m.Mount("nodev", dir, "hugetlbfs", []string{opt}); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("mount hugetlbfs needs CAP_SYS_ADMIN: %w", err)
		}
		return fmt.Errorf("mount hugetlbfs: %w", err)
	}
	return nil
}
