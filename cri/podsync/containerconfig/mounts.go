package containerconfig

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageVolumes are the images of a pod's image volumes (upstream's
// ImageVolume: volumes whose source is image), by volume name, as the
// pod's sync pulled them: Image is the reference the pull returned,
// UserSpecifiedImage the volume's reference, with the pod's runtime
// handler and annotations, as upstream's kubelet hands them to the
// runtime. A container's mount of such a volume is a CRI mount with this
// Image, no host path, read-only, and its subPath as ImageSubPath.
type ImageVolumes map[string]*runtimeapi.ImageSpec

// mounts builds the CRI mounts of the container's volumeMounts, the image
// volumes' with their images.
func (b *Builder) mounts(pod *v1.Pod, c *v1.Container, images ImageVolumes) ([]*runtimeapi.Mount, error) {
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
		if len(m) != len(c.VolumeMounts) {
			return nil, fmt.Errorf("container %s: volumes: %d mounts for %d volumeMounts", c.Name, len(m), len(c.VolumeMounts))
		}
		for i := range c.VolumeMounts {
			if err := imageMount(pod, c, &c.VolumeMounts[i], m[i], images); err != nil {
				return nil, err
			}
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
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		isImage := imageVolume(pod, vm.Name) != nil
		host, ok := paths[vm.Name]
		if !ok && !isImage {
			return nil, fmt.Errorf("container %s: volume %q is not mounted on the host (unknown or not yet set up)", c.Name, vm.Name)
		}
		imageSub := ""
		if vm.SubPath != "" {
			if err := validSubPath(vm.SubPath); err != nil {
				return nil, fmt.Errorf("container %s: volumeMount %s: %w", c.Name, vm.Name, err)
			}
			if isImage {
				imageSub = vm.SubPath
			} else {
				host = filepath.Join(host, vm.SubPath)
			}
		}
		if !path.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("container %s: volumeMount %s: mountPath %q is not absolute", c.Name, vm.Name, vm.MountPath)
		}
		m := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly, ImageSubPath: imageSub}
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
		if err := imageMount(pod, c, vm, m, images); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// imageVolume returns the image source of the pod's volume name, or nil
// when it is not an image volume.
func imageVolume(pod *v1.Pod, name string) *v1.ImageVolumeSource {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return pod.Spec.Volumes[i].Image
		}
	}
	return nil
}

// imageMount makes m, the mount of vm, the runtime's mount of its image
// when vm names an image volume, as upstream's makeMounts does: the pulled
// image, no host path, read-only whatever the volumeMount says (the
// volume is). An image volume whose image the caller did not pull (not in
// images) cannot be mounted.
func imageMount(pod *v1.Pod, c *v1.Container, vm *v1.VolumeMount, m *runtimeapi.Mount, images ImageVolumes) error {
	if imageVolume(pod, vm.Name) == nil {
		return nil
	}
	spec := images[vm.Name]
	if spec == nil || spec.GetImage() == "" {
		return fmt.Errorf("container %s: volumeMount %s: the image of image volume %q was not pulled", c.Name, vm.Name, vm.Name)
	}
	m.Image = proto.CloneOf(spec)
	m.HostPath = ""
	m.Readonly = true
	return nil
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
