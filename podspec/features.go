package podspec

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Node features: what a node declares it implements in
// status.declaredFeatures, with the names of upstream's
// k8s.io/component-helpers/nodedeclaredfeatures (Kubernetes 1.36). The
// scheduler keeps a pod that needs one (RequiredNodeFeatures) off a node
// that does not declare it, and upstream kubelet refuses such a pod at
// admission (PodFeatureUnsupported); the API server refuses a pod update
// that needs one (InPlacePodVerticalScalingInitContainers,
// InPlacePodLevelResourcesVerticalScaling) on such a node.
const (
	// NodeFeatureExtendWebSocketsToKubelet: the kubelet API serves
	// kubectl's WebSockets (exec, attach, port-forward), so the API server
	// sends them on as they are instead of translating them to SPDY.
	NodeFeatureExtendWebSocketsToKubelet = "ExtendWebSocketsToKubelet"
	// NodeFeatureInPlacePodVerticalScalingInitContainers: a regular
	// (non-sidecar) init container's CPU and memory may be resized in
	// place. Sidecars are resized under InPlacePodVerticalScaling, GA,
	// which declares nothing.
	NodeFeatureInPlacePodVerticalScalingInitContainers = "InPlacePodVerticalScalingInitContainers"
	// NodeFeatureInPlacePodLevelResourcesVerticalScaling: a pod's
	// pod-level resources (spec.resources) may be resized in place.
	NodeFeatureInPlacePodLevelResourcesVerticalScaling = "InPlacePodLevelResourcesVerticalScaling"
	// NodeFeatureRestartAllContainersOnContainerExits: a container restart
	// rule's action RestartAllContainers restarts the pod's containers in
	// place.
	NodeFeatureRestartAllContainersOnContainerExits = "RestartAllContainersOnContainerExits"
	// NodeFeatureUserNamespacesHostNetworkSupport: a host-network pod may
	// run in a user namespace of its own (hostUsers: false). Its gate is
	// off by default in 1.36.
	NodeFeatureUserNamespacesHostNetworkSupport = "UserNamespacesHostNetworkSupport"
)

// RequiredNodeFeatures returns the node features pod needs to run, sorted,
// as upstream's InferForPodScheduling of 1.36 infers them:
// RestartAllContainersOnContainerExits when a container or init container
// has a restart rule whose action is RestartAllContainers, and
// UserNamespacesHostNetworkSupport for a host-network pod with hostUsers:
// false. Nil when it needs none.
func RequiredNodeFeatures(pod *v1.Pod) []string {
	var out []string
	restartAll := func(cs []v1.Container) bool {
		return slices.ContainsFunc(cs, func(c v1.Container) bool {
			return slices.ContainsFunc(c.RestartPolicyRules, func(r v1.ContainerRestartRule) bool {
				return r.Action == v1.ContainerRestartRuleActionRestartAllContainers
			})
		})
	}
	if restartAll(pod.Spec.Containers) || restartAll(pod.Spec.InitContainers) {
		out = append(out, NodeFeatureRestartAllContainersOnContainerExits)
	}
	if pod.Spec.HostNetwork && pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		out = append(out, NodeFeatureUserNamespacesHostNetworkSupport)
	}
	return out
}

// NodeFeaturesForUpdate returns the node features an update of a pod from
// old to pod needs, sorted, as upstream's InferForPodUpdate of 1.36 infers
// them: InPlacePodLevelResourcesVerticalScaling when its pod-level
// resources (spec.resources) change, InPlacePodVerticalScalingInitContainers
// when a regular (non-sidecar) init container's resources change. Nil when
// it needs none.
func NodeFeaturesForUpdate(old, pod *v1.Pod) []string {
	var out []string
	for i := range old.Spec.InitContainers {
		c := &old.Spec.InitContainers[i]
		if !IsSidecar(c) && i < len(pod.Spec.InitContainers) &&
			!equality.Semantic.DeepEqual(c.Resources, pod.Spec.InitContainers[i].Resources) {
			out = append(out, NodeFeatureInPlacePodVerticalScalingInitContainers)
			break
		}
	}
	if (old.Spec.Resources != nil || pod.Spec.Resources != nil) && !equality.Semantic.DeepEqual(old.Spec.Resources, pod.Spec.Resources) {
		out = append(out, NodeFeatureInPlacePodLevelResourcesVerticalScaling)
	}
	slices.Sort(out)
	return out
}
