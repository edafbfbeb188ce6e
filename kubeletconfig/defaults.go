package kubeletconfig

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// Upstream's defaults that other parts of a node refer to.
const (
	// DefaultRuntimeEndpoint is containerRuntimeEndpoint's default.
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	// DefaultPodLogsDir is podLogsDir's default.
	DefaultPodLogsDir = "/var/log/pods"
	// DefaultVolumePluginDir is volumePluginDir's default (FlexVolume).
	DefaultVolumePluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
	// DefaultResolvConf is resolvConf's default on Linux.
	DefaultResolvConf = "/etc/resolv.conf"
	// DefaultMaxPods is maxPods' default.
	DefaultMaxPods = 110
)

// DefaultEvictionHard are the hard eviction thresholds a configuration
// without evictionHard gets (upstream's on Linux).
func DefaultEvictionHard() map[string]string {
	return map[string]string{"memory.available": "100Mi", "nodefs.available": "10%",
		"nodefs.inodesFree": "5%", "imagefs.available": "15%"}
}

// SetDefaults gives every field of kc that is unset upstream's v1beta1
// default, as upstream kubelet does when it reads its configuration file
// (and gives evictionHard its default when absent, as upstream does after
// reading it). Defaults that upstream ties to a feature gate follow the
// gates as kc sets them over their 1.36 defaults.
func SetDefaults(kc *kubeletv1beta1.KubeletConfiguration) {
	kc.APIVersion, kc.Kind = APIVersion, Kind
	setDurations(kc)
	setScalars(kc)
	setPointers(kc)
	if kc.EvictionHard == nil {
		kc.EvictionHard = DefaultEvictionHard()
	}
	if kc.EnforceNodeAllocatable == nil {
		kc.EnforceNodeAllocatable = []string{"pods"}
	}
	if kc.Logging.Format == "" {
		kc.Logging.Format = "text"
	}
	if kc.Logging.FlushFrequency.Duration.Duration == 0 {
		kc.Logging.FlushFrequency.Duration.Duration = 5 * time.Second
		kc.Logging.FlushFrequency.SerializeAsString = true
	}
	if gates(kc)["KubeletCrashLoopBackOffMax"] && kc.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
		kc.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: 5 * time.Minute}
	}
	if gates(kc)["KubeletEnsureSecretPulledImages"] && kc.ImagePullCredentialsVerificationPolicy == "" {
		kc.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyPreloadedImages
	}
}

// orDuration sets *d to def when it is zero.
func orDuration(d *metav1.Duration, def time.Duration) {
	if d.Duration == 0 {
		d.Duration = def
	}
}

// orValue sets *v to def when it is the zero value.
func orValue[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// orPointer points *p at def when it is nil.
func orPointer[T any](p **T, def T) {
	if *p == nil {
		*p = ptr.To(def)
	}
}

// setDurations defaults the periods and timeouts.
func setDurations(kc *kubeletv1beta1.KubeletConfiguration) {
	orDuration(&kc.SyncFrequency, time.Minute)
	orDuration(&kc.FileCheckFrequency, 20*time.Second)
	orDuration(&kc.HTTPCheckFrequency, 20*time.Second)
	orDuration(&kc.Authentication.Webhook.CacheTTL, 2*time.Minute)
	orDuration(&kc.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	orDuration(&kc.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)
	orDuration(&kc.StreamingConnectionIdleTimeout, 4*time.Hour)
	// The report period follows an update period that is set, else 5m.
	if kc.NodeStatusUpdateFrequency.Duration != 0 {
		orDuration(&kc.NodeStatusReportFrequency, kc.NodeStatusUpdateFrequency.Duration)
	}
	orDuration(&kc.NodeStatusReportFrequency, 5*time.Minute)
	orDuration(&kc.NodeStatusUpdateFrequency, 10*time.Second)
	orDuration(&kc.ImageMinimumGCAge, 2*time.Minute)
	orDuration(&kc.VolumeStatsAggPeriod, time.Minute)
	orDuration(&kc.CPUManagerReconcilePeriod, 10*time.Second)
	orDuration(&kc.RuntimeRequestTimeout, 2*time.Minute)
	orDuration(&kc.EvictionPressureTransitionPeriod, 5*time.Minute)
	if kc.CPUCFSQuotaPeriod == nil {
		kc.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	if kc.ContainerLogMonitorInterval == nil {
		kc.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
}

// setScalars defaults the strings and numbers.
func setScalars(kc *kubeletv1beta1.KubeletConfiguration) {
	orValue(&kc.Address, "0.0.0.0")
	orValue(&kc.Port, 10250)
	orValue(&kc.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook)
	orValue(&kc.RegistryBurst, 10)
	orValue(&kc.EventBurst, 100)
	orValue(&kc.HealthzBindAddress, "127.0.0.1")
	orValue(&kc.NodeLeaseDurationSeconds, 40)
	orValue(&kc.CgroupDriver, "cgroupfs")
	orValue(&kc.CPUManagerPolicy, "none")
	orValue(&kc.MemoryManagerPolicy, kubeletv1beta1.NoneMemoryManagerPolicy)
	orValue(&kc.TopologyManagerPolicy, kubeletv1beta1.NoneTopologyManagerPolicy)
	orValue(&kc.TopologyManagerScope, kubeletv1beta1.ContainerTopologyManagerScope)
	orValue(&kc.HairpinMode, kubeletv1beta1.PromiscuousBridge)
	orValue(&kc.MaxPods, DefaultMaxPods)
	orValue(&kc.MaxOpenFiles, 1000000)
	orValue(&kc.ContentType, "application/vnd.kubernetes.protobuf")
	orValue(&kc.KubeAPIBurst, 100)
	orValue(&kc.ContainerLogMaxSize, "10Mi")
	orValue(&kc.ConfigMapAndSecretChangeDetectionStrategy, kubeletv1beta1.WatchChangeDetectionStrategy)
	orValue(&kc.VolumePluginDir, DefaultVolumePluginDir)
	orValue(&kc.ContainerRuntimeEndpoint, DefaultRuntimeEndpoint)
	orValue(&kc.PodLogsDir, DefaultPodLogsDir)
	orValue(&kc.MemoryReservationPolicy, kubeletv1beta1.NoneMemoryReservationPolicy)
}

// setPointers defaults the optional fields, whose nil is "unset".
func setPointers(kc *kubeletv1beta1.KubeletConfiguration) {
	orPointer(&kc.EnableServer, true)
	orPointer(&kc.Authentication.Anonymous.Enabled, false)
	orPointer(&kc.Authentication.Webhook.Enabled, true)
	orPointer(&kc.RegistryPullQPS, 5)
	orPointer(&kc.EventRecordQPS, 50)
	orPointer(&kc.EnableDebuggingHandlers, true)
	orPointer(&kc.HealthzPort, 10248)
	orPointer(&kc.OOMScoreAdj, -999)
	orPointer(&kc.ImageGCHighThresholdPercent, 85)
	orPointer(&kc.ImageGCLowThresholdPercent, 80)
	orPointer(&kc.CgroupsPerQOS, true)
	// A negative limit is "none", spelt -1.
	if kc.PodPidsLimit == nil || *kc.PodPidsLimit < 0 {
		kc.PodPidsLimit = ptr.To[int64](-1)
	}
	orPointer(&kc.ResolverConfig, DefaultResolvConf)
	orPointer(&kc.CPUCFSQuota, true)
	orPointer(&kc.NodeStatusMaxImages, 50)
	orPointer(&kc.KubeAPIQPS, 50)
	// Pulls are serialised unless maxParallelImagePulls allows more.
	if kc.SerializeImagePulls == nil {
		kc.SerializeImagePulls = ptr.To(kc.MaxParallelImagePulls == nil || *kc.MaxParallelImagePulls < 2)
	}
	orPointer(&kc.MergeDefaultEvictionSettings, false)
	orPointer(&kc.EnableControllerAttachDetach, true)
	orPointer(&kc.MakeIPTablesUtilChains, true)
	orPointer(&kc.IPTablesMasqueradeBit, 14)
	orPointer(&kc.IPTablesDropBit, 15)
	orPointer(&kc.FailSwapOn, true)
	orPointer(&kc.ContainerLogMaxFiles, 5)
	orPointer(&kc.ContainerLogMaxWorkers, 1)
	orPointer(&kc.EnableSystemLogHandler, true)
	orPointer(&kc.EnableProfilingHandler, true)
	orPointer(&kc.EnableDebugFlagsHandler, true)
	orPointer(&kc.SeccompDefault, false)
	orPointer(&kc.FailCgroupV1, false)
	orPointer(&kc.MemoryThrottlingFactor, 0.9)
	orPointer(&kc.RegisterNode, true)
	orPointer(&kc.LocalStorageCapacityIsolation, true)
}
