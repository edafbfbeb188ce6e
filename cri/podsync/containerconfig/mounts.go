package containerconfig

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// mounts builds the CRI mounts of the container's volumeMounts.
func (b *Builder) mounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	if cm, ok := b.opts.Volumes.(ContainerMounts); ok {
		m, err := cm.Mounts(pod, c)
		if err != nil {
			err = fmt.Errorf("container %s: volumes: %w", c.Name, err)
			// An error that has a message for the container's status
			// (volume.SubPathError's, upstream's, without host paths)
			// shows that one.
			var sm interface{ StatusMessage() string }
			if errors.As(err, &sm) {
				return nil, &statusError{msg: sm.StatusMessage(), err: err}
			}
			return nil, err
		}
		return m, nil
	}
	var paths map[string]string
	if b.opts.Volumes != nil {
		var err error
		if paths, err = b.opts.Volumes.VolumeHostPaths(pod); err != nil {
			return nil, fmt.Errorf("container %s: volumes: %w", c.Name, err)
		}
	}
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		host, ok := paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: volume %q is not mounted on the host (unknown or not yet set up)", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			if err := validSubPath(vm.SubPath); err != nil {
				return nil, fmt.Errorf("container %s: volumeMount %s: %w", c.Name, vm.Name, err)
			}
			host = filepath.Join(host, vm.SubPath)
		}
		if !path.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("container %s: volumeMount %s: mountPath %q is not absolute", c.Name, vm.Name, vm.MountPath)
		}
		m := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case v1.MountPropagationHostToContainer:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			case v1.MountPropagationNone:
			default:
				return nil, fmt.Errorf("container %s: volumeMount %s: unknown mountPropagation %q", c.Name, vm.Name, *vm.MountPropagation)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// validSubPath refuses absolute subPaths and any that climb out with "..".
func validSubPath(p string) error {
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return fmt.Errorf("subPath %q must be a relative path", p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return fmt.Errorf("subPath %q must not contain '..'", p)
		}
	}
	return nil
}
