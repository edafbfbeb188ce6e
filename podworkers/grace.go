package podworkers

import v1 "k8s.io/api/core/v1"

// effectiveGracePeriod returns the grace period, in seconds, a terminating pod
// gets after an update, given the current one (0 if none yet), the pod and an
// optional override from a kill. The sources, in order: the API server's
// deletionGracePeriodSeconds, then the override; each applies only if it is
// shorter than what is already in force. Without either, and with no grace
// period yet, the pod's spec.terminationGracePeriodSeconds applies. The result
// is never below 1. shortened reports whether a grace period was in force and
// the result differs from it (it can only be smaller).
func effectiveGracePeriod(current int64, pod *v1.Pod, override *int64) (grace int64, shortened bool) {
	grace = current
	overridden := false
	if pod != nil {
		if d := pod.DeletionGracePeriodSeconds; d != nil && (grace == 0 || *d < grace) {
			grace, overridden = *d, true
		}
	}
	if override != nil && (grace == 0 || *override < grace) {
		grace, overridden = *override, true
	}
	if !overridden && grace == 0 && pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if grace < 1 {
		grace = 1
	}
	return grace, current != 0 && grace != current
}
