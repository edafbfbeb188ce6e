package node

import (
	"slices"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Capabilities are what a node does of what upstream kubelet declares as
// node features (podspec.NodeFeature*): DeclaredFeatures turns them into
// the declaration.
type Capabilities struct {
	// WebSockets: the node's kubelet API serves kubectl's WebSockets next
	// to the runtime (agent.APIOptions.WebSockets).
	WebSockets bool
	// InPlaceResize: the node resizes pods in place with package
	// allocation and cri/podsync, as the agent always does. Both take
	// regular init containers too (allocation allocates every init
	// container; podsync.ComputeActions updates a running one), so such
	// a node implements InPlacePodVerticalScalingInitContainers.
	InPlaceResize bool
	// PodLevelResize: the node resizes a pod's pod-level resources
	// (spec.resources) in place: package allocation allocates them,
	// cri/podsync resizes the pod's cgroup (PodCgroupChecker), the status
	// block reports them; as the agent always does. Upstream's
	// InPlacePodLevelResourcesVerticalScaling.
	PodLevelResize bool
	// RestartAllContainers: the node carries out the container restart
	// rule action RestartAllContainers (cri/podsync's ResetPod and the
	// status block's AllContainersRestarting condition, as the agent
	// always does), upstream's RestartAllContainersOnContainerExits.
	RestartAllContainers bool
}

// DeclaredFeatures returns the node features a node with caps implements,
// for status.declaredFeatures (Options.DeclaredFeatures), sorted:
// ExtendWebSocketsToKubelet with WebSockets,
// InPlacePodVerticalScalingInitContainers with InPlaceResize,
// InPlacePodLevelResourcesVerticalScaling with PodLevelResize and
// RestartAllContainersOnContainerExits with RestartAllContainers. It declares
// no feature the node lacks, so that the API server, the scheduler and the
// node's admission (admission.NodeFeatures) refuse what the node would not
// do instead of the node ignoring it: UserNamespacesHostNetworkSupport
// (off by default upstream) is never declared.
func DeclaredFeatures(caps Capabilities) []string {
	var out []string
	if caps.WebSockets {
		out = append(out, podspec.NodeFeatureExtendWebSocketsToKubelet)
	}
	if caps.InPlaceResize {
		out = append(out, podspec.NodeFeatureInPlacePodVerticalScalingInitContainers)
	}
	if caps.PodLevelResize {
		out = append(out, podspec.NodeFeatureInPlacePodLevelResourcesVerticalScaling)
	}
	if caps.RestartAllContainers {
		out = append(out, podspec.NodeFeatureRestartAllContainersOnContainerExits)
	}
	slices.Sort(out)
	return out
}
