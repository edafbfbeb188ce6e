package podsync

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeClasses looks up a RuntimeClass (node.k8s.io/v1) by name: its
// handler, overhead and scheduling. It answers from what it has (a
// client-go lister fits) and must not block; a class that does not exist
// is an error for which apierrors.IsNotFound is true.
type RuntimeClasses interface {
	RuntimeClass(name string) (*nodev1.RuntimeClass, error)
}

// RuntimeClassesFunc adapts a function to RuntimeClasses.
type RuntimeClassesFunc func(name string) (*nodev1.RuntimeClass, error)

// RuntimeClass implements RuntimeClasses.
func (f RuntimeClassesFunc) RuntimeClass(name string) (*nodev1.RuntimeClass, error) { return f(name) }

var _ RuntimeClasses = RuntimeClassesFunc(nil)

// SandboxCgroups gives a pod's sandbox its cgroup parent, the pod's own
// cgroup (package cgroups' Manager has this method).
type SandboxCgroups interface {
	CgroupParent(pod *v1.Pod) (string, error)
}

// handler is the runtime handler the pod's sandbox runs under, as
// upstream's runtime class manager resolves it: no runtime class is the
// default handler (Options.RuntimeHandler); with Options.RuntimeClasses a
// class is looked up, and one that does not exist fails the sandbox; without,
// the class's name is the handler.
func (s *Syncer) handler(pod *v1.Pod) (string, error) {
	name := ""
	if pod.Spec.RuntimeClassName != nil {
		name = *pod.Spec.RuntimeClassName
	}
	if name == "" {
		return s.opts.RuntimeHandler, nil
	}
	if s.opts.RuntimeClasses == nil {
		return name, nil
	}
	rc, err := s.opts.RuntimeClasses.RuntimeClass(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", err
		}
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}

// PodOverhead is the pod's overhead: its spec's (which the API server's
// RuntimeClass admission sets), else, with classes, its RuntimeClass's
// fixed overhead (a pod the API server never admitted: a static pod). A
// class that cannot be found gives none.
func PodOverhead(pod *v1.Pod, classes RuntimeClasses) v1.ResourceList {
	if pod.Spec.Overhead != nil || classes == nil || pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return pod.Spec.Overhead
	}
	rc, err := classes.RuntimeClass(*pod.Spec.RuntimeClassName)
	if err != nil || rc.Overhead == nil {
		return nil
	}
	return rc.Overhead.PodFixed
}

// WithOverhead returns the pod with PodOverhead in its spec: the pod
// itself when that changes nothing, else a shallow copy.
func WithOverhead(pod *v1.Pod, classes RuntimeClasses) *v1.Pod {
	o := PodOverhead(pod, classes)
	if o == nil || pod.Spec.Overhead != nil {
		return pod
	}
	cp := *pod
	cp.Spec.Overhead = o
	return &cp
}

// applySandboxCgroup gives the sandbox config the pod's cgroup parent
// (Options.Cgroups), as upstream's does; nothing without Options.Cgroups.
func (s *Syncer) applySandboxCgroup(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if s.opts.Cgroups == nil {
		return nil
	}
	parent, err := s.opts.Cgroups.CgroupParent(pod)
	if err != nil {
		return fmt.Errorf("sandbox config of %s: %w", podDesc(pod), err)
	}
	cfg.Linux.CgroupParent = parent
	return nil
}
