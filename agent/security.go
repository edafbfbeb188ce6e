package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonSupplementalGroupsPolicyNotSupported is the reason of a pod refused
// for a supplementalGroupsPolicy the node's runtime cannot apply,
// upstream's.
const ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"

// admitSupplementalGroupsPolicy refuses, as upstream's admission does, a
// pod whose supplementalGroupsPolicy is Strict on a node whose runtime
// does not report the feature (supported is asked only then): the runtime
// would merge the image's groups in, and the pod would run with more
// groups than it asked for. Merge, the runtime's own behaviour, is always
// admitted.
func admitSupplementalGroupsPolicy(pod *v1.Pod, supported func() bool) (ok bool, reason, message string) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return true, "", ""
	}
	if supported() {
		return true, "", ""
	}
	return false, ReasonSupplementalGroupsPolicyNotSupported,
		fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)
}

// runtimeSupportsSupplementalGroupsPolicy tells whether the runtime's status
// reports the SupplementalGroupsPolicy feature (upstream's node status
// features.supplementalGroupsPolicy); no answer means no.
func (a *Agent) runtimeSupportsSupplementalGroupsPolicy() bool {
	return a.runtimeStatus("supplementalGroupsPolicy Strict").GetFeatures().GetSupplementalGroupsPolicy()
}
