package kubeletconfig

import (
	"reflect"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// mapped are the fields Convert maps (or checks) itself, by JSON name.
var mapped = map[string]bool{
	"enableServer": true, "staticPodPath": true, "podLogsDir": true, "syncFrequency": true,
	"fileCheckFrequency": true, "httpCheckFrequency": true, "staticPodURL": true, "address": true,
	"port": true, "readOnlyPort": true, "healthzPort": true, "healthzBindAddress": true,
	"tlsCertFile": true, "tlsPrivateKeyFile": true,
	"tlsCipherSuites": true, "tlsMinVersion": true, "rotateCertificates": true, "serverTLSBootstrap": true,
	"authentication": true, "authorization": true, "nodeStatusUpdateFrequency": true, "nodeStatusReportFrequency": true,
	"nodeLeaseDurationSeconds": true, "imageMinimumGCAge": true, "imageMaximumGCAge": true,
	"imageGCHighThresholdPercent": true, "imageGCLowThresholdPercent": true, "cgroupRoot": true,
	"cgroupsPerQOS": true, "cgroupDriver": true, "runtimeRequestTimeout": true, "kubeAPIQPS": true,
	"kubeAPIBurst": true, "contentType": true, "evictionHard": true, "evictionSoft": true,
	"evictionSoftGracePeriod": true, "evictionPressureTransitionPeriod": true,
	"evictionMinimumReclaim": true, "mergeDefaultEvictionSettings": true, "featureGates": true,
	"containerLogMaxSize": true, "containerLogMaxFiles": true, "systemReserved": true,
	"kubeReserved": true, "enforceNodeAllocatable": true, "allowedUnsafeSysctls": true,
	"providerID": true, "logging": true, "shutdownGracePeriod": true,
	"shutdownGracePeriodCriticalPods": true, "shutdownGracePeriodByPodPriority": true,
	"crashLoopBackOff": true, "seccompDefault": true, "registerWithTaints": true, "registerNode": true,
	"containerRuntimeEndpoint": true, "clusterDNS": true, "clusterDomain": true, "resolvConf": true,
	"maxPods": true, "serializeImagePulls": true, "maxParallelImagePulls": true, "podPidsLimit": true, "cpuCFSQuotaPeriod": true,
	"imagePullCredentialsVerificationPolicy": true, "preloadedImagesVerificationAllowlist": true,
	"enableSystemLogHandler": true, "enableSystemLogQuery": true,
	"cpuManagerPolicy": true, "cpuManagerPolicyOptions": true, "cpuManagerReconcilePeriod": true, "reservedSystemCPUs": true,
	"topologyManagerPolicy": true, "topologyManagerScope": true, "topologyManagerPolicyOptions": true,
	"memoryManagerPolicy": true, "reservedMemory": true,
}

// ignored are the fields upstream itself does not act on in the
// configurations it accepts here: hairpinMode is for network plugins a CRI
// runtime does not have; the iptables bits mark packets for chains
// kubelet no longer uses them for; memoryThrottlingFactor only matters
// under MemoryQoS (refused).
var ignored = map[string]bool{
	"hairpinMode": true, "iptablesMasqueradeBit": true, "iptablesDropBit": true,
	"memoryThrottlingFactor": true,
}

// offValues are the values, beside upstream's default, that a field not
// implemented may take because they say what the node does: it serves no
// pprof or debug flags, does not check swap, does not limit
// pulls per second, makes no iptables chains.
var offValues = map[string]any{
	"enableProfilingHandler":  false,
	"enableDebugFlagsHandler": false,
	"failSwapOn":              false,
	"registryPullQPS":         int32(0),
	"makeIPTablesUtilChains":  false,
}

// jsonName is the JSON name of a struct field.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// checkRest refuses every field neither mapped nor ignored that differs
// from upstream's default (and from its off value).
func (c *converter) checkRest() {
	def := &kubeletv1beta1.KubeletConfiguration{}
	SetDefaults(def)
	got, want := reflect.ValueOf(c.kc).Elem(), reflect.ValueOf(def).Elem()
	t := got.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if f.Anonymous || name == "" || name == "-" || mapped[name] || ignored[name] {
			continue
		}
		v := got.Field(i)
		if reflect.DeepEqual(v.Interface(), want.Field(i).Interface()) {
			continue
		}
		if off, ok := offValues[name]; ok && reflect.DeepEqual(reflect.Indirect(v).Interface(), off) {
			continue
		}
		c.refuse(name, v.Interface(), why[name])
	}
}

// why says what the node lacks for some of the refused fields.
var why = map[string]string{}
