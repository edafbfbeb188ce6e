package volume

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/internal/expansion"
)

// Mounts returns the CRI mounts of container's volumeMounts: the host path
// of each volume (with its subPath or expanded subPathExpr resolved safely,
// see below), the container path, read-only (the mount's or the volume's:
// configMap, secret, downwardAPI and projected always are), SELinux
// relabelling (Mounted.SELinuxRelabel) and propagation. Every volume must
// be set up (WaitForMount returned nil); otherwise the error wraps
// ErrNotMounted. A bad mount wraps
// ErrInvalidVolume and names the container and mount.
//
// A subPath must be relative without "..". It is resolved from the
// volume's real path one element at a time: a symlink is followed only if
// its target stays inside the volume, and a subPath that does not exist is
// created as a directory with the volume root's mode, as upstream does
// (also in a read-only volume). The result is then pinned, as upstream
// pins it: opened element by element without following symlinks and
// bind-mounted through that file descriptor on
// <RootDir>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>, which
// is the mount's host path. A container that can write the volume cannot
// redirect it by swapping an element for a symlink between the check and
// the runtime's mount. A restarted container reuses its pin while it shows
// the same file. With Options.UnpinnedSubPaths the resolved path is
// handed over as it is. A subPath that cannot be made ready is a
// *SubPathError.
//
// The mount of an image volume (Mounted.Image) has no host path and is
// read-only; its subPath (or expanded subPathExpr), checked as any other,
// is the mount's ImageSubPath, which the runtime resolves inside the
// image. Its Image is left for the caller to fill in with the image the
// pod's sync pulled (package cri/podsync/containerconfig does). The
// mounts are in the order of container.VolumeMounts.
func (m *Manager) Mounts(pod *v1.Pod, container *v1.Container) ([]*runtimeapi.Mount, error) {
	if len(container.VolumeMounts) == 0 {
		return nil, nil
	}
	mounted := m.mountedOf(pod)
	out := make([]*runtimeapi.Mount, 0, len(container.VolumeMounts))
	for i := range container.VolumeMounts {
		vm := &container.VolumeMounts[i]
		mt, err := m.mount(pod, container, i, vm, mounted)
		if err != nil {
			return nil, fmt.Errorf("container %s: volumeMount %s: %w", container.Name, vm.Name, err)
		}
		out = append(out, mt)
	}
	return out, nil
}

// VolumeHostPaths returns the host path of each of pod's volumes that is
// set up, by name; it satisfies containerconfig.VolumeHostPaths. Mounts is
// the safer hook: it resolves subPaths against symlinks.
func (m *Manager) VolumeHostPaths(pod *v1.Pod) (map[string]string, error) {
	mounted := m.mountedOf(pod)
	out := make(map[string]string, len(mounted))
	for name, mt := range mounted {
		out[name] = mt.HostPath
	}
	return out, nil
}

// mountedOf copies what is set up for pod.
func (m *Manager) mountedOf(pod *v1.Pod) map[string]Mounted {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.core.mounted(pod.UID)
}

func (m *Manager) mount(pod *v1.Pod, c *v1.Container, index int, vm *v1.VolumeMount, mounted map[string]Mounted) (*runtimeapi.Mount, error) {
	mt, ok := mounted[vm.Name]
	if !ok {
		return nil, fmt.Errorf("%w: volume %q is not set up", ErrNotMounted, vm.Name)
	}
	if !path.IsAbs(vm.MountPath) {
		return nil, fmt.Errorf("%w: mountPath %q is not absolute", ErrInvalidVolume, vm.MountPath)
	}
	host := mt.HostPath
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		if sub != "" {
			return nil, fmt.Errorf("%w: subPath and subPathExpr are mutually exclusive", ErrInvalidVolume)
		}
		var err error
		if sub, err = expandSubPathExpr(pod, c, vm.SubPathExpr, m.opts.NodeName); err != nil {
			return nil, err
		}
		if sub == "" {
			return nil, fmt.Errorf("%w: subPathExpr %q expands to nothing", ErrInvalidVolume, vm.SubPathExpr)
		}
	}
	imageSub := ""
	if sub != "" {
		if err := validateRelativePath("subPath", sub); err != nil {
			return nil, err
		}
		// An image volume's subPath is the runtime's to resolve inside
		// the image, as upstream hands it over: nothing on the host.
		if mt.Image {
			imageSub = sub
		} else {
			var err error
			if host, err = m.subPath(pod, c, index, vm, host, sub); err != nil {
				return nil, err
			}
		}
	}
	out := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly || mt.ReadOnly, SelinuxRelabel: mt.SELinuxRelabel, ImageSubPath: imageSub}
	if vm.MountPropagation != nil {
		switch *vm.MountPropagation {
		case v1.MountPropagationNone:
			out.Propagation = runtimeapi.MountPropagation_PROPAGATION_PRIVATE
		case v1.MountPropagationHostToContainer:
			out.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
		case v1.MountPropagationBidirectional:
			if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
				return nil, fmt.Errorf("%w: Bidirectional mount propagation is available only to privileged containers", ErrInvalidVolume)
			}
			out.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
		default:
			return nil, fmt.Errorf("%w: unknown mountPropagation %q", ErrInvalidVolume, *vm.MountPropagation)
		}
	}
	if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
		if !out.Readonly {
			return nil, fmt.Errorf("%w: recursiveReadOnly Enabled needs readOnly", ErrInvalidVolume)
		}
		out.RecursiveReadOnly = true
	}
	return out, nil
}

// ResolveSubPath resolves sub (relative, already free of "..") inside the
// volume at base and returns the real path: each element is looked at in
// turn, a symlink is followed only when its target stays inside base's real
// path, and a missing element is created as a directory with base's mode
// when create is true (an error otherwise). On Linux every step holds a
// file descriptor (openat with O_NOFOLLOW, mkdirat, fchmod), so a
// concurrent swap of an element for a symlink makes it fail rather than
// create or change anything outside the volume; elsewhere it works on
// paths.
func ResolveSubPath(base, sub string, create bool) (string, error) {
	p, resolved, err := resolveSubPath(base, sub, create)
	if err != nil {
		return "", err
	}
	p.close()
	return resolved, nil
}

// within reports whether p is root or below it (both clean, real paths).
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) || root == string(filepath.Separator)
}

// expandSubPathExpr expands $(VAR) in a subPathExpr with the container's
// env: literal values and the fieldRefs known before the pod runs
// (metadata.name, metadata.namespace, metadata.uid, labels and annotations
// by key, spec.nodeName, spec.serviceAccountName). A reference to another
// kind of variable is an error rather than a silently wrong path.
func expandSubPathExpr(pod *v1.Pod, c *v1.Container, expr, nodeName string) (string, error) {
	vars := map[string]string{}
	bad := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = expansion.Expand(e.Value, vars)
			delete(bad, e.Name)
		case e.ValueFrom.FieldRef != nil:
			v, err := envField(pod, e.ValueFrom.FieldRef.FieldPath, nodeName)
			if err != nil {
				bad[e.Name] = err.Error()
				delete(vars, e.Name)
				continue
			}
			vars[e.Name] = v
			delete(bad, e.Name)
		default:
			bad[e.Name] = "its value source is not supported in subPathExpr"
			delete(vars, e.Name)
		}
	}
	for name, why := range bad {
		if strings.Contains(expr, "$("+name+")") {
			return "", fmt.Errorf("%w: subPathExpr %q: env %s: %s", ErrUnsupported, expr, name, why)
		}
	}
	return expansion.Expand(expr, vars), nil
}

func envField(pod *v1.Pod, p, nodeName string) (string, error) {
	switch p {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	return downwardField(pod, p)
}
