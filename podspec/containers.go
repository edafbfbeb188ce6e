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

// Containers returns pointers to pod's init containers (sidecars among
// them, in order), then its app containers: the order in which resource
// managers allocate and a pod's containers start.
func Containers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// Container returns the pod's init or app container of that name, nil if
// there is none.
func Container(pod *v1.Pod, name string) *v1.Container {
	for _, c := range Containers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// IsRegularInitContainer reports whether c is one of pod's init containers
// that is not a sidecar: it runs to completion before the next one starts,
// so the resources it held can be reused by the containers after it.
func IsRegularInitContainer(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return !IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}
