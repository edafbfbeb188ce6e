package kubeletconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
	"unicode"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// ErrInvalid is wrapped by Validate's errors.
var ErrInvalid = errors.New("invalid kubelet configuration")

// gateDefaults are the 1.36 defaults of the feature gates that defaulting
// and validation look at (v1.36.3's pkg/features/kube_features.go); a
// configuration's featureGates override them.
var gateDefaults = map[string]bool{
	"GracefulNodeShutdown":                    true,
	"GracefulNodeShutdownBasedOnPodPriority":  true,
	"CustomCPUCFSQuotaPeriod":                 true,
	"ImageMaximumGCAge":                       true,
	"RotateKubeletServerCertificate":          true,
	"NodeSwap":                                true,
	"KubeletCrashLoopBackOffMax":              true,
	"MemoryQoS":                               false,
	"NodeLogQuery":                            true,
	"KubeletEnsureSecretPulledImages":         true,
	"EventedPLEG":                             false,
	"ExtendWebSocketsToKubelet":               true,
	"KubeletSeparateDiskGC":                   true,
	"DisableCPUQuotaWithExclusiveCPUs":        true,
	"PodLevelResources":                       true,
	"InPlacePodLevelResourcesVerticalScaling": true,
	"KubeletPodResourcesListUseActivePods":    true,
	// Alpha and off in 1.36; the node is without them, so off is accepted.
	"PodLevelResourceManagers": false,
}

// gates are the feature gates kc runs with, as far as gateDefaults knows.
func gates(kc *kubeletv1beta1.KubeletConfiguration) map[string]bool {
	g := make(map[string]bool, len(gateDefaults))
	for k, v := range gateDefaults {
		g[k] = v
	}
	for k, v := range kc.FeatureGates {
		g[k] = v
	}
	return g
}

// Validate checks a defaulted configuration as upstream kubelet does, with
// upstream's messages ("invalid configuration: maxPods (--max-pods) -1
// must not be a negative number"), every failure at once. The checks are
// those of the fields the node implements or whose values it accepts; the
// others Convert refuses by name.
func Validate(kc *kubeletv1beta1.KubeletConfiguration) error {
	v := &validator{kc: kc, gate: gates(kc)}
	v.numbers()
	v.images()
	v.shutdown()
	v.allocatable()
	v.misc()
	if len(v.errs) == 0 {
		return nil
	}
	return fmt.Errorf("kubelet config: %w: %w", ErrInvalid, errors.Join(v.errs...))
}

// validator gathers Validate's failures.
type validator struct {
	kc   *kubeletv1beta1.KubeletConfiguration
	gate map[string]bool
	errs []error
}

// fail records a failure unless ok.
func (v *validator) fail(ok bool, format string, args ...any) {
	if !ok {
		v.errs = append(v.errs, fmt.Errorf("invalid configuration: "+format, args...))
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// inRange reports whether lo <= n <= hi.
func inRange[T int32 | int64](n, lo, hi T) bool { return n >= lo && n <= hi }

// numbers checks ports, rates and limits.
func (v *validator) numbers() {
	kc := v.kc
	v.fail(kc.NodeLeaseDurationSeconds > 0, "nodeLeaseDurationSeconds must be greater than 0")
	v.fail(kc.SystemCgroups == "" || kc.CgroupRoot != "", "systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified")
	v.fail(kc.EventBurst >= 0, "eventBurst (--event-burst) %v must not be a negative number", kc.EventBurst)
	v.fail(deref(kc.EventRecordQPS) >= 0, "eventRecordQPS (--event-qps) %v must not be a negative number", deref(kc.EventRecordQPS))
	hp := deref(kc.HealthzPort)
	v.fail(hp == 0 || inRange(hp, 1, 65535), "healthzPort (--healthz-port) %v must be between 1 and 65535, inclusive", hp)
	v.fail(kc.KubeAPIBurst >= 0, "kubeAPIBurst (--kube-api-burst) %v must not be a negative number", kc.KubeAPIBurst)
	v.fail(deref(kc.KubeAPIQPS) >= 0, "kubeAPIQPS (--kube-api-qps) %v must not be a negative number", deref(kc.KubeAPIQPS))
	v.fail(deref(kc.NodeStatusMaxImages) >= -1, "nodeStatusMaxImages (--node-status-max-images) %v must be -1 or greater", deref(kc.NodeStatusMaxImages))
	v.fail(kc.MaxOpenFiles >= 0, "maxOpenFiles (--max-open-files) %v must not be a negative number", kc.MaxOpenFiles)
	v.fail(kc.MaxPods >= 0, "maxPods (--max-pods) %v must not be a negative number", kc.MaxPods)
	oom := deref(kc.OOMScoreAdj)
	v.fail(inRange(oom, -1000, 1000), "oomScoreAdj (--oom-score-adj) %v must be between -1000 and 1000, inclusive", oom)
	v.fail(kc.PodsPerCore >= 0, "podsPerCore (--pods-per-core) %v must not be a negative number", kc.PodsPerCore)
	v.fail(inRange(kc.Port, 1, 65535), "port (--port) %v must be between 1 and 65535, inclusive", kc.Port)
	v.fail(kc.ReadOnlyPort == 0 || inRange(kc.ReadOnlyPort, 1, 65535), "readOnlyPort (--read-only-port) %v must be between 0 and 65535, inclusive", kc.ReadOnlyPort)
	v.fail(kc.RegistryBurst >= 0, "registryBurst (--registry-burst) %v must not be a negative number", kc.RegistryBurst)
	v.fail(deref(kc.RegistryPullQPS) >= 0, "registryPullQPS (--registry-qps) %v must not be a negative number", deref(kc.RegistryPullQPS))
	if p := kc.MaxParallelImagePulls; p != nil {
		v.fail(*p >= 1, "maxParallelImagePulls %v must be a positive number", *p)
		v.fail(!deref(kc.SerializeImagePulls) || *p <= 1, "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false")
	}
	v.fail(!kc.ServerTLSBootstrap || v.gate["RotateKubeletServerCertificate"], "serverTLSBootstrap %v requires feature gate RotateKubeletServerCertificate", kc.ServerTLSBootstrap)
	v.fail(!kc.RunOnce, "runOnce (--runOnce) %v, Runonce mode has been deprecated and should not be set", kc.RunOnce)
	for _, t := range kc.RegisterWithTaints {
		v.fail(validTaint(t), "invalid taint: %v", t)
		v.fail(t.TimeAdded == nil, "taint.TimeAdded is not nil")
	}
}

// validTaint reports whether t has a qualified key, a label value and an
// effect of the three.
func validTaint(t v1.Taint) bool {
	if len(validation.IsQualifiedName(t.Key)) > 0 || len(validation.IsValidLabelValue(t.Value)) > 0 {
		return false
	}
	switch t.Effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		return true
	}
	return false
}

// images checks image garbage collection and the CFS quota period.
func (v *validator) images() {
	kc := v.kc
	cfs := deref(kc.CPUCFSQuotaPeriod).Duration
	if !v.gate["CustomCPUCFSQuotaPeriod"] {
		v.fail(cfs == 100*time.Millisecond, "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) %v requires feature gate CustomCPUCFSQuotaPeriod", deref(kc.CPUCFSQuotaPeriod))
	} else {
		v.fail(cfs >= time.Millisecond && cfs <= time.Second, "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) %v must be between 1ms and 1sec, inclusive", deref(kc.CPUCFSQuotaPeriod))
	}
	high, low := deref(kc.ImageGCHighThresholdPercent), deref(kc.ImageGCLowThresholdPercent)
	v.fail(inRange(high, 0, 100), "imageGCHighThresholdPercent (--image-gc-high-threshold) %v must be between 0 and 100, inclusive", high)
	v.fail(inRange(low, 0, 100), "imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be between 0 and 100, inclusive", low)
	v.fail(low < high, "imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %v", low, high)
	minAge, maxAge := kc.ImageMinimumGCAge.Duration, kc.ImageMaximumGCAge.Duration
	v.fail(maxAge == 0 || v.gate["ImageMaximumGCAge"], "ImageMaximumGCAge feature gate is required for Kubelet configuration option imageMaximumGCAge")
	v.fail(minAge >= 0, "imageMinimumGCAge %v must not be negative", minAge)
	v.fail(maxAge >= 0, "imageMaximumGCAge %v must not be negative", maxAge)
	v.fail(maxAge <= 0 || maxAge > minAge, "imageMaximumGCAge %v must be greater than imageMinimumGCAge %v", maxAge, minAge)
	v.fail(deref(kc.IPTablesDropBit) >= 0 && deref(kc.IPTablesDropBit) <= 31, "iptablesDropBit (--iptables-drop-bit) %v must be between 0 and 31, inclusive", deref(kc.IPTablesDropBit))
	v.fail(deref(kc.IPTablesMasqueradeBit) >= 0 && deref(kc.IPTablesMasqueradeBit) <= 31, "iptablesMasqueradeBit (--iptables-masquerade-bit) %v must be between 0 and 31, inclusive", deref(kc.IPTablesMasqueradeBit))
}

// shutdown checks graceful node shutdown and the crash-loop back-off.
func (v *validator) shutdown() {
	kc := v.kc
	grace, critical := kc.ShutdownGracePeriod, kc.ShutdownGracePeriodCriticalPods
	if v.gate["GracefulNodeShutdown"] {
		v.fail(critical.Duration <= grace.Duration, "shutdownGracePeriodCriticalPods %v must be <= shutdownGracePeriod %v", critical, grace)
		v.fail(grace.Duration == 0 || grace.Duration >= time.Second, "shutdownGracePeriod %v must be either zero or otherwise >= 1 sec", grace)
		v.fail(critical.Duration == 0 || critical.Duration >= time.Second, "shutdownGracePeriodCriticalPods %v must be either zero or otherwise >= 1 sec", critical)
	} else {
		v.fail(grace.Duration <= 0 && critical.Duration <= 0, "specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown")
	}
	byPriority := len(kc.ShutdownGracePeriodByPodPriority) != 0
	if v.gate["GracefulNodeShutdownBasedOnPodPriority"] {
		v.fail(!byPriority || (grace.Duration <= 0 && critical.Duration <= 0), "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
	} else {
		v.fail(!byPriority, "Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority")
	}
	if v.gate["NodeSwap"] {
		switch b := kc.MemorySwap.SwapBehavior; b {
		case "", "NoSwap", "LimitedSwap":
		default:
			v.fail(false, "memorySwap.swapBehavior %q must be one of: \"\", %q or %q", b, "LimitedSwap", "NoSwap")
		}
	} else {
		v.fail(kc.MemorySwap == (kubeletv1beta1.MemorySwapConfiguration{}), "memorySwap.swapBehavior cannot be set when NodeSwap feature flag is disabled")
	}
	maxRestart := kc.CrashLoopBackOff.MaxContainerRestartPeriod
	if v.gate["KubeletCrashLoopBackOffMax"] {
		v.fail(maxRestart != nil, "FeatureGate KubeletCrashLoopBackOffMax is enabled, CrashLoopBackOff.MaxContainerRestartPeriod must be set")
		if maxRestart != nil {
			v.fail(maxRestart.Duration >= time.Second && maxRestart.Duration <= 300*time.Second, "CrashLoopBackOff.MaxContainerRestartPeriod (got: %v seconds) must be set between 1s and 300s", maxRestart.Seconds())
		}
	} else {
		v.fail(maxRestart == nil, "FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set")
	}
}

// Upstream's enforceNodeAllocatable keys.
const (
	enforcePods                 = "pods"
	enforceSystemReserved       = "system-reserved"
	enforceSystemReservedCompr  = "system-reserved-compressible"
	enforceKubeReserved         = "kube-reserved"
	enforceKubeReservedCompr    = "kube-reserved-compressible"
	enforceNone                 = "none"
	enforceOptionsForValidation = "%q specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are %q, %q, %q, %q, %q or %q"
)

// allocatable checks enforceNodeAllocatable.
func (v *validator) allocatable() {
	kc := v.kc
	has := map[string]bool{}
	for _, e := range kc.EnforceNodeAllocatable {
		has[e] = true
	}
	v.fail(!has[enforceSystemReserved] || !has[enforceSystemReservedCompr], "both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", enforceSystemReserved, enforceSystemReservedCompr)
	v.fail(!has[enforceKubeReserved] || !has[enforceKubeReservedCompr], "both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", enforceKubeReserved, enforceKubeReservedCompr)
	seen := map[string]bool{}
	for _, e := range kc.EnforceNodeAllocatable {
		if seen[e] {
			v.fail(false, "duplicated enforcements %q in enforceNodeAllocatable (--enforce-node-allocatable)", e)
			continue
		}
		seen[e] = true
		switch e {
		case enforcePods:
		case enforceSystemReserved, enforceSystemReservedCompr:
			v.fail(kc.SystemReservedCgroup != "", "systemReservedCgroup (--system-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", enforceSystemReserved, enforceSystemReservedCompr)
		case enforceKubeReserved, enforceKubeReservedCompr:
			v.fail(kc.KubeReservedCgroup != "", "kubeReservedCgroup (--kube-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", enforceKubeReserved, enforceKubeReservedCompr)
		case enforceNone:
			v.fail(len(kc.EnforceNodeAllocatable) <= 1, "enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", enforceNone)
			continue
		default:
			v.fail(false, "option "+enforceOptionsForValidation, e, enforcePods, enforceSystemReserved, enforceSystemReservedCompr, enforceKubeReserved, enforceKubeReservedCompr, enforceNone)
			continue
		}
		v.fail(deref(kc.CgroupsPerQOS), "cgroupsPerQOS (--cgroups-per-qos) must be set to true when %q contained in enforceNodeAllocatable (--enforce-node-allocatable)", e)
	}
}

// misc checks the policies, the log settings and the runtime endpoint.
func (v *validator) misc() {
	kc := v.kc
	switch p := kc.TopologyManagerPolicy; p {
	case "none", "best-effort", "restricted", "single-numa-node":
	default:
		v.fail(false, "topologyManagerPolicy (--topology-manager-policy) %q must be one of: %q", p, []string{"none", "best-effort", "restricted", "single-numa-node"})
	}
	switch s := kc.TopologyManagerScope; s {
	case "container", "pod":
	default:
		v.fail(false, "topologyManagerScope (--topology-manager-scope) %q must be one of: %q, or %q", s, "container", "pod")
	}
	switch m := kc.HairpinMode; m {
	case kubeletv1beta1.HairpinNone, kubeletv1beta1.HairpinVeth, kubeletv1beta1.PromiscuousBridge:
	default:
		v.fail(false, "option %q specified for hairpinMode (--hairpin-mode). Valid options are %q, %q or %q", m, kubeletv1beta1.HairpinNone, kubeletv1beta1.HairpinVeth, kubeletv1beta1.PromiscuousBridge)
	}
	if v.gate["KubeletEnsureSecretPulledImages"] {
		for _, err := range pullrecords.CheckPolicy(pullrecords.Policy(kc.ImagePullCredentialsVerificationPolicy), kc.PreloadedImagesVerificationAllowlist) {
			v.fail(false, "%v", err)
		}
	} else {
		v.fail(kc.ImagePullCredentialsVerificationPolicy == "", "`imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled")
		v.fail(len(kc.PreloadedImagesVerificationAllowlist) == 0, "`preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled")
	}
	v.fail(kc.ReservedSystemCPUs == "" || (kc.SystemReservedCgroup == "" && kc.KubeReservedCgroup == ""), "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
	factor := kc.MemoryThrottlingFactor
	v.fail(!v.gate["MemoryQoS"] || factor != nil, "memoryThrottlingFactor is required when MemoryQoS feature flag is enabled")
	v.fail(factor == nil || (*factor > 0 && *factor <= 1.0), "memoryThrottlingFactor %v must be greater than 0 and less than or equal to 1.0", deref(factor))
	policy := kc.MemoryReservationPolicy
	v.fail(v.gate["MemoryQoS"] || policy != kubeletv1beta1.TieredReservationMemoryReservationPolicy, "memoryReservationPolicy %q requires MemoryQoS feature gate to be enabled", policy)
	switch policy {
	case kubeletv1beta1.NoneMemoryReservationPolicy, kubeletv1beta1.TieredReservationMemoryReservationPolicy:
	default:
		v.fail(false, "option %q specified for memoryReservationPolicy. Valid options are %q or %q", policy, kubeletv1beta1.NoneMemoryReservationPolicy, kubeletv1beta1.TieredReservationMemoryReservationPolicy)
	}
	v.fail(kc.ContainerRuntimeEndpoint != "", "the containerRuntimeEndpoint was not specified or empty")
	logQuery := deref(kc.EnableSystemLogQuery)
	v.fail(!logQuery || v.gate["NodeLogQuery"], "NodeLogQuery feature gate is required for enableSystemLogQuery")
	v.fail(!logQuery || deref(kc.EnableSystemLogHandler), "enableSystemLogHandler is required for enableSystemLogQuery")
	v.fail(deref(kc.ContainerLogMaxWorkers) >= 1, "containerLogMaxWorkers must be greater than or equal to 1")
	v.fail(deref(kc.ContainerLogMonitorInterval).Duration >= 3*time.Second, "containerLogMonitorInterval must be a positive time duration greater than or equal to 3s")
	v.fail(deref(kc.ContainerLogMaxFiles) > 1, "containerLogMaxFiles must be greater than 1")
	v.fail(kc.PodLogsDir != "", "podLogsDir was not specified")
	v.fail(filepath.IsAbs(kc.PodLogsDir), "pod logs path %q must be absolute path", kc.PodLogsDir)
	v.fail(filepath.Clean(kc.PodLogsDir) == kc.PodLogsDir, "pod logs path %q must be normalized", kc.PodLogsDir)
	for _, c := range kc.PodLogsDir {
		if c > unicode.MaxASCII {
			// Upstream's message, its typo included.
			v.fail(false, "pod logs path %q mut contains ASCII characters only", kc.PodLogsDir)
			break
		}
	}
}
