package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonSupplementalGroupsPolicyNotSupported is the reason of a pod refused
// for a supplementalGroupsPolicy the node's runtime cannot apply,
// upstream's.
const ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"

// SupplementalGroupsPolicy refuses, as upstream's admission does, a pod
// whose supplementalGroupsPolicy is Strict on a node whose runtime does not
// report the feature: the runtime would merge the image's groups in, and
// the pod would run with more groups than it asked for. Merge, the
// runtime's own behaviour, is always admitted. The function says whether
// the runtime supports Strict (upstream's node status
// features.supplementalGroupsPolicy); it is asked only for a pod that
// wants Strict, and a nil function means it does not.
type SupplementalGroupsPolicy func() bool

var _ Handler = SupplementalGroupsPolicy(nil)

// Admit refuses a Strict pod the runtime cannot honour.
func (supported SupplementalGroupsPolicy) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return true, "", ""
	}
	if supported != nil && supported() {
		return true, "", ""
	}
	return false, ReasonSupplementalGroupsPolicyNotSupported,
		fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)
}
