package admission

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ReasonPodFeatureUnsupported is the reason of a pod refused for needing
// a node feature the node does not declare, upstream's.
const ReasonPodFeatureUnsupported = "PodFeatureUnsupported"

// NodeFeatures refuses, as upstream's declared features admit handler
// (NodeDeclaredFeatures, beta and on by default since 1.36), a pod that
// needs node features (podspec.RequiredNodeFeatures) the node does not
// declare: the names are the node's status.declaredFeatures
// (status/node.DeclaredFeatures). Reason PodFeatureUnsupported, message
// "Pod requires node features that are not available: " and the missing
// features, sorted, comma-separated. A pod needing none is always
// admitted.
type NodeFeatures []string

var _ Handler = NodeFeatures(nil)

// Admit refuses a pod that needs a feature missing from f.
func (f NodeFeatures) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	var missing []string
	for _, name := range podspec.RequiredNodeFeatures(pod) {
		if !slices.Contains(f, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return true, "", ""
	}
	return false, ReasonPodFeatureUnsupported, "Pod requires node features that are not available: " + strings.Join(missing, ", ")
}

// ReasonPodLevelResourcesNotSupported is the reason of a pod refused for
// setting pod-level resources on a node whose PodLevelResources gate is
// off, upstream's.
const ReasonPodLevelResourcesNotSupported = "PodLevelResourcesNotSupported"

// MessagePodLevelResourcesDisabled is the message of such a refusal,
// upstream's.
const MessagePodLevelResourcesDisabled = "PodLevelResources feature gate is disabled"

// PodLevelResources is upstream's pod features admit handler: with
// Enabled false (the PodLevelResources gate turned off) a pod that sets
// pod-level resources (podspec.HasPodLevelResources) is refused with
// ReasonPodLevelResourcesNotSupported, since the node would ignore them;
// with Enabled true, or for a pod without them, it admits.
type PodLevelResources struct {
	// Enabled says the node honours pod-level resources.
	Enabled bool
}

var _ Handler = PodLevelResources{}

// Admit refuses a pod with pod-level resources when they are disabled.
func (h PodLevelResources) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	if h.Enabled || !podspec.HasPodLevelResources(pod) {
		return true, "", ""
	}
	return false, ReasonPodLevelResourcesNotSupported, MessagePodLevelResourcesDisabled
}
