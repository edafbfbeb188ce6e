package admission

import (
	"runtime"

	v1 "k8s.io/api/core/v1"
)

// goos is the operating system the node runs, the default of
// PredicateOptions.GOOS.
const goos = runtime.GOOS

// AdmitOS refuses a pod meant for another operating system than goos, as
// upstream's predicate handler does first: a kubernetes.io/os label on the
// pod naming another (ReasonPodOSSelectorNodeLabelDoesNotMatch), or
// spec.os.name naming another (ReasonPodOSNotSupported).
func AdmitOS(pod *v1.Pod, goos string) (ok bool, reason, message string) {
	if os, set := pod.Labels[v1.LabelOSStable]; set && os != goos {
		return false, ReasonPodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goos {
		return false, ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS"
	}
	return true, "", ""
}
