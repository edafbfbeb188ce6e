package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Plugin names, as upstream.
const (
	EmptyDirPluginName    = "kubernetes.io/empty-dir"
	HostPathPluginName    = "kubernetes.io/host-path"
	ConfigMapPluginName   = "kubernetes.io/configmap"
	SecretPluginName      = "kubernetes.io/secret"
	DownwardAPIPluginName = "kubernetes.io/downward-api"
	ProjectedPluginName   = "kubernetes.io/projected"
	CSIPluginName         = "kubernetes.io/csi"
	ImagePluginName       = "kubernetes.io/image"
	LocalPluginName       = "kubernetes.io/local-volume"
)

// emptyDirPerm is the mode of an emptyDir, as upstream: anyone in the pod
// may write.
const emptyDirPerm fs.FileMode = 0o777

// emptyDirPlugin is the emptyDir plugin.
type emptyDirPlugin struct {
	mounter     Mounter
	allocatable v1.ResourceList
}

var _ Plugin = (*emptyDirPlugin)(nil)

func (p *emptyDirPlugin) Name() string                    { return EmptyDirPluginName }
func (p *emptyDirPlugin) CanSupport(spec *v1.Volume) bool { return spec.EmptyDir != nil }

// SetUp creates the directory (0777), or mounts a tmpfs there for medium
// Memory, sized as memoryVolumeSize says, or a hugetlbfs for medium
// HugePages or HugePages-<size>, of the page size the pod's huge page
// requests give (hugePageSizeMountOption); with the pod's fsGroup the
// directory is the group's, setgid, as upstream's.
func (p *emptyDirPlugin) SetUp(_ context.Context, v *Volume) (Mounted, error) {
	ed := v.Spec.EmptyDir
	switch ed.Medium {
	case v1.StorageMediumDefault:
		if err := makeDir(v.Dir, emptyDirPerm); err != nil {
			return Mounted{}, err
		}
	case v1.StorageMediumMemory:
		var opts []string
		if size, ok := memoryVolumeSize(v.Pod, ed.SizeLimit, p.allocatable); ok {
			opts = append(opts, "size="+strconv.FormatInt(size, 10))
		}
		if err := setUpTmpfs(p.mounter, v.Dir, opts); err != nil {
			return Mounted{}, err
		}
		if err := makeDir(v.Dir, emptyDirPerm); err != nil {
			return Mounted{}, err
		}
	default:
		if !isHugePagesMedium(ed.Medium) {
			return Mounted{}, fmt.Errorf("%w: emptyDir medium %q (only \"\", %q and %q are supported)", ErrUnsupported, ed.Medium,
				v1.StorageMediumMemory, v1.StorageMediumHugePages)
		}
		if err := setUpHugetlbfs(p.mounter, v.Dir, ed.Medium, v.Pod); err != nil {
			return Mounted{}, err
		}
	}
	fsGroup, policy := podFSGroup(v.Pod)
	if err := setOwnership(v.Dir, fsGroup, policy, false); err != nil {
		return Mounted{}, fmt.Errorf("emptyDir %s: fsGroup %d: %w", v.Name, *fsGroup, err)
	}
	return Mounted{HostPath: v.Dir, SELinuxRelabel: true}, nil
}

// TearDown unmounts a tmpfs if there is one and removes the directory.
func (p *emptyDirPlugin) TearDown(_ context.Context, v *Volume) error {
	return tearDownDir(p.mounter, v.Dir)
}

// makeDir creates dir with the permission bits perm (the umask does not
// apply); a tmpfs root keeps its sticky bit, as upstream's does.
func makeDir(dir string, perm fs.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != perm {
		return os.Chmod(dir, perm)
	}
	return nil
}

// setUpTmpfs mounts a tmpfs on dir unless one is there already.
func setUpTmpfs(m Mounter, dir string, opts []string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	mounted, err := m.IsMountPoint(dir)
	if err != nil {
		return fmt.Errorf("check mount point %s: %w", dir, err)
	}
	if mounted {
		return nil
	}
	if err := m.Mount("tmpfs", dir, "tmpfs", opts); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("mount tmpfs needs CAP_SYS_ADMIN: %w", err)
		}
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	return nil
}

// memoryVolumeSize is the size of a memory-backed emptyDir, as upstream:
// the smallest of its sizeLimit, the pod's memory limit and the node's
// allocatable memory, among those that are known; ok is false when none is
// (the tmpfs then has the kernel's default size, half the RAM).
func memoryVolumeSize(pod *v1.Pod, sizeLimit *resource.Quantity, alloc v1.ResourceList) (int64, bool) {
	var size int64
	ok := false
	take := func(q resource.Quantity) {
		if v := q.Value(); v > 0 && (!ok || v < size) {
			size, ok = v, true
		}
	}
	if sizeLimit != nil {
		take(*sizeLimit)
	}
	if l, has := podMemoryLimit(pod); has {
		take(l)
	}
	if q, has := alloc[v1.ResourceMemory]; has {
		take(q)
	}
	return size, ok
}

// podMemoryLimit is the pod's effective memory limit: its pod-level one
// (spec.resources, podspec.HasPodLevelResources) when it sets one, else
// known only when every container sets one: the sum over app containers and
// sidecars, or the largest init container's if that is more.
func podMemoryLimit(pod *v1.Pod) (resource.Quantity, bool) {
	if podspec.HasPodLevelResources(pod) {
		if l := pod.Spec.Resources.Limits.Memory(); !l.IsZero() {
			return *l, true
		}
	}
	var sum resource.Quantity
	for _, c := range pod.Spec.Containers {
		l, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(l)
	}
	var maxInit resource.Quantity
	for _, c := range pod.Spec.InitContainers {
		l, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		if podspec.IsSidecar(&c) {
			sum.Add(l)
		} else if l.Cmp(maxInit) > 0 {
			maxInit = l
		}
	}
	if maxInit.Cmp(sum) > 0 {
		sum = maxInit
	}
	return sum, len(pod.Spec.Containers) > 0
}

// tearDownDir unmounts dir if it is a mount point, then removes it with
// everything in it. A failed unmount leaves everything in place.
func tearDownDir(m Mounter, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	mounted, err := m.IsMountPoint(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check mount point %s: %w", dir, err)
	}
	if mounted {
		if err := m.Unmount(dir); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}
