package podsync

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// PodOverhead is the pod's overhead: its spec's (which the API server's
// RuntimeClass admission sets), else, with classes, its RuntimeClass's
// fixed overhead (a pod the API server never admitted: a static pod). A
// class that cannot be found gives none.
func PodOverhead(pod *v1.Pod, classes containerconfig.RuntimeClasses) v1.ResourceList {
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
func WithOverhead(pod *v1.Pod, classes containerconfig.RuntimeClasses) *v1.Pod {
	o := PodOverhead(pod, classes)
	if o == nil || pod.Spec.Overhead != nil {
		return pod
	}
	cp := *pod
	cp.Spec.Overhead = o
	return &cp
}
