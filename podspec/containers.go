package podspec

import v1 "k8s.io/api/core/v1"

// IsSidecar reports whether c, an init container, is restartable: a
// sidecar, which starts in the init containers' order, keeps running
// beside the regular containers and is restarted whatever the pod's
// restart policy. A regular container's restart policy (upstream's
// container restart rules) does not make it a sidecar: callers ask for
// init containers.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// RestartsOnResize reports whether an in-place resize that changes
// resource r of c restarts the container rather than updating it: its
// resizePolicy for r says RestartContainer (the default is NotRequired).
func RestartsOnResize(c *v1.Container, r v1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == v1.RestartContainer
		}
	}
	return false
}
