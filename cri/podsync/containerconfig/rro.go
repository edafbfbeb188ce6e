package containerconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recursiveReadOnly marks recursively read-only the mounts whose
// volumeMount asks for it, as upstream resolves recursiveReadOnly: Enabled
// needs a read-only mount without propagation on a runtime handler that
// supports it; IfPossible is recursive where the handler supports it and
// plain read-only otherwise.
func (b *Builder) recursiveReadOnly(pod *v1.Pod, c *v1.Container, mounts []*runtimeapi.Mount) error {
	var supported *bool
	for _, vm := range c.VolumeMounts {
		mode := vm.RecursiveReadOnly
		if mode == nil || *mode == v1.RecursiveReadOnlyDisabled {
			continue
		}
		if !vm.ReadOnly {
			return fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
		}
		if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
			return fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *vm.MountPropagation)
		}
		if supported == nil {
			ok := b.opts.RecursiveReadOnlyMounts != nil && b.opts.RecursiveReadOnlyMounts(b.runtimeHandler(pod))
			supported = &ok
		}
		switch *mode {
		case v1.RecursiveReadOnlyIfPossible:
			if !*supported {
				continue
			}
		case v1.RecursiveReadOnlyEnabled:
			if !*supported {
				return fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
			}
		default:
			return fmt.Errorf("unknown recursive read-only mode %q", *mode)
		}
		for _, m := range mounts {
			if m.GetContainerPath() == vm.MountPath {
				m.RecursiveReadOnly = true
			}
		}
	}
	return nil
}
