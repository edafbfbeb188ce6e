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
	// RestartAllContainers: the node carries out the container restart
	// rule action RestartAllContainers (cri/podsync's ResetPod and the
	// status block's AllContainersRestarting condition, as the agent
	// always does), upstream's RestartAllContainersOnContainerExits.
	RestartAllContainers bool
}

// DeclaredFeatures returns the node features a node with caps implements,
// for status.declaredFeatures (Options.DeclaredFeatures), sorted:
// ExtendWebSocketsToKubelet with WebSockets,
// InPlacePodVerticalScalingInitContainers with InPlaceResize and
// RestartAllContainersOnContainerExits with RestartAllContainers. It declares
// no feature the node lacks, so that the API server, the scheduler and the
// node's admission (admission.NodeFeatures) refuse what the node would not
// do instead of the node ignoring it: InPlacePodLevelResourcesVerticalScaling
// is never declared (neither allocation nor podsync resizes pod-level
// resources yet), nor UserNamespacesHostNetworkSupport (off by default upstream).
func DeclaredFeatures(caps Capabilities) []string {
	var out []string
	if caps.WebSockets {
		out = append(out, podspec.NodeFeatureExtendWebSocketsToKubelet)
	}
	if caps.InPlaceResize {
		out = append(out, podspec.NodeFeatureInPlacePodVerticalScalingInitContainers)
	}
	if caps.RestartAllContainers {
		out = append(out, podspec.NodeFeatureRestartAllContainersOnContainerExits)
	}
	slices.Sort(out)
	return out
}
