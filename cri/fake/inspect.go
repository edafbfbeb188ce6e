package fake

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Sandboxes returns the status of every sandbox, in creation order. It is
// not a CRI call: it is not recorded, no fault applies, and it works after
// Close.
func (r *Runtime) Sandboxes() []*runtimeapi.PodSandboxStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*runtimeapi.PodSandboxStatus, 0, r.sandboxes.len())
	r.sandboxes.each(func(s *sandbox) { out = append(out, s.toStatus()) })
	return out
}

// Containers returns the status of every container, in creation order. It
// is not a CRI call: it is not recorded, no fault applies, and it works
// after Close.
func (r *Runtime) Containers() []*runtimeapi.ContainerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*runtimeapi.ContainerStatus, 0, r.containers.len())
	r.containers.each(func(c *container) { out = append(out, r.containerStatusLocked(c)) })
	return out
}
