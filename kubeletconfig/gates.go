package kubeletconfig

// The feature gates of upstream v1.36.3 that are on by default, as
// docs/feature-gates.md sorts them, by what a configuration's
// featureGates may say of each (checkGates). Gates the caller can turn
// either way are honouredGates (convert.go).

// alwaysOnGates are the gates whose behaviour the node always has
// (implemented, or held as upstream holds such a pod): true is accepted,
// as it changes nothing; false is refused, since the node cannot turn the
// behaviour off.
var alwaysOnGates = map[string]bool{
	"ComponentFlagz": true, "ComponentStatusz": true, "ContainerCheckpoint": true,
	"ContainerRestartRules": true, "DisableNodeKubeProxyVersion": true,
	"DRAExtendedResource": true, "DynamicResourceAllocation": true, "EnvFiles": true,
	"ExecProbeTimeout": true, "HostnameOverride": true, "ImageMaximumGCAge": true, "ImageVolume": true,
	"InPlacePodVerticalScaling":               true,
	"InPlacePodVerticalScalingInitContainers": true, "KubeletCgroupDriverFromCRI": true,
	"KubeletFineGrainedAuthz": true, "KubeletPSI": true, "KubeletPodResourcesDynamicResources": true, "KubeletSeparateDiskGC": true, "KubeletPodResourcesGet": true,
	"KubeletServiceAccountTokenForCredentialProviders": true,
	"NodeDeclaredFeatures":                             true, "NodeSwap": true, "PLEGOnDemandRelist": true,
	"PodLifecycleSleepAction": true, "PodLifecycleSleepActionAllowZero": true,
	"PodObservedGenerationTracking": true, "PodReadyToStartContainersCondition": true,
	"PreventStaticPodAPIReferences": true, "ProcMountType": true, "RecursiveReadOnlyMounts": true,
	"RelaxedDNSSearchValidation": true, "RelaxedEnvironmentVariableValidation": true,
	"ReloadKubeletClientCAFile": true, "ReloadKubeletServerCertificateFile": true,
	"ResourceHealthStatus": true, "RestartAllContainersOnContainerExits": true,
	"RotateKubeletServerCertificate": true, "SELinuxChangePolicy": true, "SidecarContainers": true,
	"SupplementalGroupsPolicy": true, "SystemdWatchdog": true, "UserNamespacesSupport": true,
}

// configRefusedGates are the gates whose configuration fields the node
// refuses by name (tracing; the CPU and topology managers' policy options
// beyond those it implements, which cpumanager and topologymanager refuse
// by name whatever the gates say): either value is accepted, since what
// would use the gate cannot be configured.
var configRefusedGates = map[string]bool{
	"KubeletTracing": true, "CPUManagerPolicyOptions": true, "CPUManagerPolicyBetaOptions": true,
	"CPUManagerPolicyAlphaOptions": true,
	"TopologyManagerPolicyOptions": true, "TopologyManagerPolicyBetaOptions": true,
}

// notYetGates are on by default upstream and not implemented here: false
// is accepted (the node is without them), true is refused.
var notYetGates = map[string]bool{
	"CSIServiceAccountTokenSecrets": true, "MutableCSINodeAllocatableCount": true, "RecoverVolumeExpansionFailure": true,
	"ResourceHealthStatusMessage": true, "SELinuxMountReadWriteOncePod": true,
}

// nodeIrrelevantGates change the API server, the scheduler, a controller
// or kube-proxy, nothing a node does; upstream's kubelet takes them (its
// gates are one registry for every component) and so does this package,
// either way.
var nodeIrrelevantGates = map[string]bool{
	"AllowServiceExternalIPs": true, "AnyVolumeDataSource": true, "AuthorizeNodeWithSelectors": true,
	"AuthorizePodWebsocketUpgradeCreatePermission": true, "ClearingNominatedNodeNameAfterBinding": true,
	"DisableAllocatorDualWrite": true, "ExternalServiceAccountTokenSigner": true,
	"MultiCIDRServiceAllocator": true, "PodTopologyLabelsAdmission": true, "PortForwardWebsockets": true,
	"TranslateStreamCloseWebsocketRequests": true, "RelaxedServiceNameValidation": true,
	"ServiceAccountNodeAudienceRestriction": true, "ServiceAccountTokenJTI": true,
	"ServiceAccountTokenNodeBinding": true, "ServiceAccountTokenNodeBindingValidation": true,
	"ServiceAccountTokenPodNodeInfo": true, "ServiceCIDRStatusFieldWiping": true,
	"StorageNamespaceIndex": true, "StreamingCollectionEncodingToJSON": true,
	"StreamingCollectionEncodingToProtobuf": true, "StrictIPCIDRValidation": true,
	"VolumeAttributesClass": true, "DRAAdminAccess": true, "DRAConsumableCapacity": true,
	"DRADeviceBindingConditions": true, "DRADeviceTaints": true, "DRAPartitionableDevices": true,
	"DRAPrioritizedList": true, "DRAResourceClaimDeviceStatus": true,
	"DRAResourceClaimGranularStatusAuthorization": true, "DRASchedulerFilterTimeout": true,
	"MatchLabelKeysInPodAffinity": true, "MatchLabelKeysInPodTopologySpread": true,
	"MatchLabelKeysInPodTopologySpreadSelectorMerge": true, "NodeInclusionPolicyInPodTopologySpread": true,
	"NominatedNodeNameForExpectation": true, "OpportunisticBatching": true, "PodSchedulingReadiness": true,
	"SchedulerAsyncPreemption": true, "SchedulerPopFromBackoffQ": true, "SchedulerQueueingHints": true,
	"DeploymentReplicaSetTerminatingReplicas": true, "HPAConfigurableTolerance": true,
	"JobBackoffLimitPerIndex": true, "JobManagedBy": true, "JobPodReplacementPolicy": true,
	"JobSuccessPolicy": true, "LogarithmicScaleDown": true, "MutablePodResourcesForSuspendedJobs": true,
	"MutableSchedulingDirectivesForSuspendedJobs": true, "OrderedNamespaceDeletion": true,
	"PodDeletionCost": true, "SeparateTaintEvictionController": true,
	"StaleControllerConsistencyDaemonSet": true, "StaleControllerConsistencyJob": true,
	"StaleControllerConsistencyReplicaSet": true, "StaleControllerConsistencyStatefulSet": true,
	"StatefulSetSemanticRevisionComparison": true, "NFTablesProxyMode": true,
	"PreferSameTrafficDistribution": true, "WinDSR": true, "WinOverlay": true,
}

// gateRefusal says why a featureGates entry is refused, "" when it is
// accepted: a gate the caller turns (honouredGates) or one of the lists
// above as each says; an off-by-default gate left off; anything else
// (a gate turned on that the node does not have, a name this package
// does not know) is refused.
func gateRefusal(name string, on bool) (refused bool, why string) {
	switch {
	case honouredGates[name], configRefusedGates[name], nodeIrrelevantGates[name]:
		return false, ""
	case alwaysOnGates[name]:
		if on {
			return false, ""
		}
		return true, "always on in this node"
	case notYetGates[name]:
		if !on {
			return false, ""
		}
		return true, "not implemented by this node"
	}
	if def, known := gateDefaults[name]; known && !def && !on {
		return false, "" // off, as the node is
	}
	return true, ""
}
