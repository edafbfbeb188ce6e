package agent

import (
	"runtime"

	v1 "k8s.io/api/core/v1"
)

// The reasons of a pod refused for the operating system it names, upstream's.
const (
	ReasonPodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported                  = "PodOSNotSupported"
)

// admitOS refuses a pod meant for another operating system than the node's
// (goos), as upstream's predicate admission: a kubernetes.io/os label on the
// pod naming another OS, or spec.os.name naming another.
func admitOS(pod *v1.Pod, goos string) (ok bool, reason, message string) {
	if os, set := pod.Labels[v1.LabelOSStable]; set && os != goos {
		return false, ReasonPodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goos {
		return false, ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS"
	}
	return true, "", ""
}

// nodeOS is the operating system admitOS holds pods to.
const nodeOS = runtime.GOOS
