package podspec

import v1 "k8s.io/api/core/v1"

// IsTerminal reports whether phase is Succeeded or Failed: a pod in it has
// finished for good, its containers never run again, and a kubelet that
// finds a pod in it (from the API server, or from what it reported before a
// restart) stops what may remain of it instead of starting it.
func IsTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}
