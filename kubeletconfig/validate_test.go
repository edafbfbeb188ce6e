package kubeletconfig_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// Bad values get upstream's messages, every one at once.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(kc *kubeletv1beta1.KubeletConfiguration)
		want []string
	}{
		{"maxPods", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.MaxPods = -1 },
			[]string{"invalid configuration: maxPods (--max-pods) -1 must not be a negative number"}},
		{"port", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.Port = 70000 },
			[]string{"invalid configuration: port (--port) 70000 must be between 1 and 65535, inclusive"}},
		{"readOnlyPort", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ReadOnlyPort = -2 },
			[]string{"invalid configuration: readOnlyPort (--read-only-port) -2 must be between 0 and 65535, inclusive"}},
		{"healthzPort", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HealthzPort = ptrTo[int32](65536) },
			[]string{"invalid configuration: healthzPort (--healthz-port) 65536 must be between 1 and 65535, inclusive"}},
		{"cpuCFSQuotaPeriod", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.CPUCFSQuotaPeriod = ptrTo(duration(2 * time.Second)) },
			[]string{"invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {2s} must be between 1ms and 1sec, inclusive"}},
		{"cpuCFSQuotaPeriod without its gate", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CPUCFSQuotaPeriod = ptrTo(duration(50 * time.Millisecond))
			kc.FeatureGates = map[string]bool{"CustomCPUCFSQuotaPeriod": false}
		}, []string{"invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {50ms} requires feature gate CustomCPUCFSQuotaPeriod"}},
		{"lease", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.NodeLeaseDurationSeconds = -1 },
			[]string{"invalid configuration: nodeLeaseDurationSeconds must be greater than 0"}},
		{"image gc", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.ImageGCHighThresholdPercent, kc.ImageGCLowThresholdPercent = ptrTo[int32](70), ptrTo[int32](101)
		}, []string{
			"invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 101 must be between 0 and 100, inclusive",
			"invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 101 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 70",
		}},
		{"image max age", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ImageMaximumGCAge = duration(time.Minute) },
			[]string{"invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s"}},
		{"shutdown", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.ShutdownGracePeriod, kc.ShutdownGracePeriodCriticalPods = duration(10*time.Second), duration(20*time.Second)
		}, []string{"invalid configuration: shutdownGracePeriodCriticalPods {20s} must be <= shutdownGracePeriod {10s}"}}, // upstream prints the metav1.Duration struct
		{"shutdown short", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ShutdownGracePeriod = duration(time.Millisecond) },
			[]string{"invalid configuration: shutdownGracePeriod {1ms} must be either zero or otherwise >= 1 sec"}},
		{"log files", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ContainerLogMaxFiles = ptrTo[int32](1) },
			[]string{"invalid configuration: containerLogMaxFiles must be greater than 1"}},
		{"pod logs dir", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.PodLogsDir = "var/log/../pods" },
			[]string{`invalid configuration: pod logs path "var/log/../pods" must be absolute path`, `invalid configuration: pod logs path "var/log/../pods" must be normalized`}},
		{"enforce", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CgroupsPerQOS = ptrTo(false)
			kc.EnforceNodeAllocatable = []string{"pods", "bogus"}
		}, []string{
			`invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable)`,
			`invalid configuration: option "bogus" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"`,
		}},
		{"enforce none", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.EnforceNodeAllocatable = []string{"none", "pods"} },
			[]string{`invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified`}},
		{"system reserved", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.EnforceNodeAllocatable = []string{"system-reserved"} },
			[]string{`invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable)`}},
		{"pulls", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.MaxParallelImagePulls = ptrTo[int32](3) },
			[]string{"invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"}},
		{"pulls zero", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.MaxParallelImagePulls = ptrTo[int32](0) },
			[]string{"invalid configuration: maxParallelImagePulls 0 must be a positive number"}},
		{"taint", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.RegisterWithTaints = []v1.Taint{{Key: "a b", Effect: v1.TaintEffectNoSchedule}, {Key: "ok", Effect: "Sometimes"}, {Key: "t", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}}}
		}, []string{"invalid taint: ", "invalid configuration: taint.TimeAdded is not nil"}},
		{"runtime endpoint", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ContainerRuntimeEndpoint = "" },
			[]string{"invalid configuration: the containerRuntimeEndpoint was not specified or empty"}},
		{"hairpin", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HairpinMode = "loop" },
			[]string{`invalid configuration: option "loop" specified for hairpinMode (--hairpin-mode). Valid options are "none", "hairpin-veth" or "promiscuous-bridge"`}},
		{"crash loop without gate", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.FeatureGates = map[string]bool{"KubeletCrashLoopBackOffMax": false}
			kc.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: time.Minute}
		}, []string{"invalid configuration: FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set"}},
		{"image pull credentials policy", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ImagePullCredentialsVerificationPolicy = "Sometimes" },
			[]string{`invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`}},
		{"allowlist beside another policy", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.PreloadedImagesVerificationAllowlist = []string{"registry.example/*"}
		}, []string{"invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""}},
		{"allowlist pattern", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyAllowlistedImages
			kc.PreloadedImagesVerificationAllowlist = []string{"registry.example/*", "registry.example/app:1"}
		}, []string{"invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: registry.example/app:1"}},
		{"image pull credentials without the gate", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.FeatureGates = map[string]bool{"KubeletEnsureSecretPulledImages": false}
			kc.PreloadedImagesVerificationAllowlist = []string{"registry.example/*"}
		}, []string{
			"invalid configuration: `imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
			"invalid configuration: `preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
		}},
		{"crash loop unset with the gate", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CrashLoopBackOff.MaxContainerRestartPeriod = nil
		}, []string{"invalid configuration: FeatureGate KubeletCrashLoopBackOffMax is enabled, CrashLoopBackOff.MaxContainerRestartPeriod must be set"}},
		{"crash loop too short", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: 500 * time.Millisecond}
		}, []string{"invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be set between 1s and 300s"}},
		{"crash loop too long", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: 301 * time.Second}
		}, []string{"invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 301 seconds) must be set between 1s and 300s"}},
		{"runOnce", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.RunOnce = true },
			[]string{"invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := &kubeletv1beta1.KubeletConfiguration{}
			kubeletconfig.SetDefaults(kc)
			require.NoError(t, kubeletconfig.Validate(kc))
			tc.set(kc)
			err := kubeletconfig.Validate(kc)
			require.ErrorIs(t, err, kubeletconfig.ErrInvalid)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}
