package podspec

import v1 "k8s.io/api/core/v1"

// SystemCriticalPriority is the priority at and above which a pod is
// critical: that of the system-cluster-critical and system-node-critical
// priority classes, upstream's scheduling.SystemCriticalPriority.
const SystemCriticalPriority int32 = 2_000_000_000

// IsCritical reports whether pod is critical, as upstream's kubelet judges
// it: a static pod, a mirror pod, or a priority of at least
// SystemCriticalPriority. The eviction manager never evicts a critical pod
// and admits it under any pressure; admission lets one that lacks only
// resources preempt other pods instead of refusing it; graceful shutdown
// stops critical pods last.
func IsCritical(pod *v1.Pod) bool {
	if IsStatic(pod) || IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}
