package containerconfig

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

// RuntimeHandler returns the runtime handler the pod's sandbox runs under,
// the one to pass to RunPodSandbox, as upstream's runtime class manager
// resolves it: no runtime class is the default handler
// (Options.RuntimeHandler); with Options.RuntimeClasses a class is looked
// up, and one that does not exist is an error (NotFound); without, the
// class's name is the handler.
func (b *Builder) RuntimeHandler(pod *v1.Pod) (string, error) {
	name := ""
	if pod.Spec.RuntimeClassName != nil {
		name = *pod.Spec.RuntimeClassName
	}
	if name == "" {
		return b.opts.RuntimeHandler, nil
	}
	if b.opts.RuntimeClasses == nil {
		return name, nil
	}
	rc, err := b.opts.RuntimeClasses.RuntimeClass(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", err
		}
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}

// runtimeHandler is the handler the pod's sandbox runs under (RuntimeHandler):
// "" when its runtime class cannot be found, whose sandbox fails anyway.
func (b *Builder) runtimeHandler(pod *v1.Pod) string {
	h, _ := b.RuntimeHandler(pod)
	return h
}

// applySandboxCgroup gives the sandbox config the pod's cgroup parent
// (Options.Cgroups), as upstream's does; nothing without Options.Cgroups.
func (b *Builder) applySandboxCgroup(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if b.opts.Cgroups == nil {
		return nil
	}
	parent, err := b.opts.Cgroups.CgroupParent(pod)
	if err != nil {
		return fmt.Errorf("sandbox config of %s: %w", podDesc(pod), err)
	}
	cfg.Linux.CgroupParent = parent
	return nil
}
