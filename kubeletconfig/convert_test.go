package kubeletconfig_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/kubeletconfig"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
)

// convert defaults kc after set, validates and converts it.
func convert(t *testing.T, set func(kc *kubeletv1beta1.KubeletConfiguration)) (*kubeletconfig.Config, error) {
	t.Helper()
	kc := &kubeletv1beta1.KubeletConfiguration{}
	set(kc)
	kubeletconfig.SetDefaults(kc)
	require.NoError(t, kubeletconfig.Validate(kc))
	return kubeletconfig.Convert(kc)
}

// Every field the node implements reaches the agent's options or the
// cluster settings.
func TestConvertHonoured(t *testing.T) {
	cfg, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.StaticPodPath, kc.StaticPodURL, kc.PodLogsDir = "/etc/manifests", "http://pods", "/logs"
		kc.SyncFrequency, kc.FileCheckFrequency, kc.HTTPCheckFrequency = duration(30*time.Second), duration(5*time.Second), duration(5*time.Second)
		kc.Address, kc.Port, kc.ReadOnlyPort = "10.0.0.1", 11250, 11255
		kc.TLSCertFile, kc.TLSPrivateKeyFile, kc.TLSMinVersion = "/c", "/k", "VersionTLS13"
		kc.TLSCipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		kc.Authentication.X509.ClientCAFile = "/ca"
		kc.Authentication.Anonymous.Enabled = ptrTo(true)
		kc.Authentication.Webhook.Enabled = ptrTo(false)
		kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
		kc.NodeStatusUpdateFrequency, kc.NodeStatusReportFrequency = duration(20*time.Second), duration(5*time.Minute)
		kc.NodeLeaseDurationSeconds = 60
		kc.ImageGCHighThresholdPercent, kc.ImageGCLowThresholdPercent = ptrTo[int32](90), ptrTo[int32](70)
		kc.ImageMinimumGCAge, kc.ImageMaximumGCAge = duration(time.Minute), duration(time.Hour)
		kc.CgroupsPerQOS, kc.CgroupDriver, kc.CgroupRoot = ptrTo(true), "systemd", "/kk"
		kc.PodPidsLimit = ptrTo[int64](4096)
		kc.CPUCFSQuotaPeriod = ptrTo(duration(50 * time.Millisecond)) // CustomCPUCFSQuotaPeriod, GA and on in 1.36
		kc.KubeAPIQPS, kc.KubeAPIBurst = ptrTo[int32](20), 30
		kc.EvictionHard = map[string]string{"memory.available": "200Mi"}
		kc.EvictionSoft = map[string]string{"nodefs.available": "20%"}
		kc.EvictionSoftGracePeriod = map[string]string{"nodefs.available": "1m"}
		kc.EvictionPressureTransitionPeriod = duration(time.Minute)
		kc.FeatureGates = map[string]bool{"EventedPLEG": true, "KubeletCrashLoopBackOffMax": true}
		kc.CrashLoopBackOff.MaxContainerRestartPeriod = ptrTo(duration(time.Minute))
		kc.ContainerLogMaxSize, kc.ContainerLogMaxFiles = "1Mi", ptrTo[int32](3)
		kc.KubeReserved = map[string]string{"cpu": "100m", "pid": "1000"}
		kc.SystemReserved = map[string]string{"memory": "1Gi"}
		kc.AllowedUnsafeSysctls = []string{"net.core.somaxconn"}
		kc.SeccompDefault = ptrTo(true)
		kc.ShutdownGracePeriodByPodPriority = []kubeletv1beta1.ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 10}}
		kc.RegisterWithTaints = []v1.Taint{{Key: "edge", Effect: v1.TaintEffectNoSchedule}}
		kc.ProviderID, kc.RegisterNode = "kind://docker/kind/n1", ptrTo(false)
		kc.ContainerRuntimeEndpoint, kc.RuntimeRequestTimeout = "unix:///crio.sock", duration(time.Minute)
		kc.Logging.Verbosity = 4
		kc.ClusterDNS, kc.ClusterDomain, kc.ResolverConfig = []string{"10.96.0.10", "fd00::a"}, "cluster.local", ptrTo("")
		kc.MaxPods, kc.SerializeImagePulls, kc.MaxParallelImagePulls = 500, ptrTo(false), ptrTo[int32](3)
	})
	require.NoError(t, err)
	o := cfg.Agent
	assert.Equal(t, "/etc/manifests", o.Sources.ManifestPath)
	assert.Equal(t, "http://pods", o.Sources.ManifestURL)
	assert.Equal(t, "/logs", o.Logs.Dir)
	assert.Equal(t, 30*time.Second, o.Timings.Resync)
	assert.Equal(t, 5*time.Second, o.Timings.SourcePeriod)
	assert.Equal(t, 20*time.Second, o.Timings.NodeStatus)
	assert.Equal(t, 5*time.Minute, o.Timings.NodeStatusReport)
	assert.Equal(t, time.Minute, o.Node.MaxContainerRestartPeriod, "the crash loop's maximum")
	assert.Zero(t, o.Timings.BackoffMax, "image pulls keep their back-off")
	assert.Equal(t, "10.0.0.1:11255", o.HTTP.Listen)
	require.NotNil(t, o.HTTP.API)
	assert.Equal(t, "10.0.0.1:11250", o.HTTP.API.Listen)
	assert.True(t, o.HTTP.API.Anonymous)
	assert.Equal(t, "/c", o.HTTP.API.TLS.CertFile)
	assert.Equal(t, "/k", o.HTTP.API.TLS.KeyFile)
	assert.Equal(t, "/ca", o.HTTP.API.TLS.ClientCAFile)
	assert.Equal(t, uint16(tls.VersionTLS13), o.HTTP.API.TLS.MinVersion)
	assert.Equal(t, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, o.HTTP.API.TLS.CipherSuites)
	assert.Equal(t, 60*time.Second, o.Cluster.LeaseDuration)
	assert.Equal(t, 90, o.ImageGC.HighThresholdPercent)
	assert.Equal(t, 70, o.ImageGC.LowThresholdPercent)
	assert.Equal(t, time.Minute, o.ImageGC.MinAge)
	assert.Equal(t, time.Hour, o.ImageGC.MaxAge)
	assert.True(t, o.Cgroups.PerQOS)
	assert.Equal(t, "systemd", o.Cgroups.Driver)
	assert.Equal(t, "/kk", o.Cgroups.Root)
	assert.Equal(t, int64(4096), o.Cgroups.PodPidsLimit)
	assert.Equal(t, 50*time.Millisecond, o.Cgroups.CPUCFSQuotaPeriod)
	assert.True(t, o.EventedPLEG)
	assert.Equal(t, int64(1<<20), o.Logs.MaxSize)
	assert.Equal(t, 3, o.Logs.MaxFiles)
	assert.Equal(t, resource.MustParse("100m"), o.Node.KubeReserved[v1.ResourceCPU])
	assert.Equal(t, resource.MustParse("1000"), o.Node.KubeReserved["pid"])
	assert.Equal(t, resource.MustParse("1Gi"), o.Node.SystemReserved[v1.ResourceMemory])
	assert.Equal(t, []string{"net.core.somaxconn"}, o.Security.AllowedUnsafeSysctls)
	assert.True(t, o.Security.SeccompDefault)
	assert.Equal(t, []nodeshutdown.PriorityGracePeriod{{Priority: 0, GracePeriodSeconds: 10}}, o.Shutdown.ByPodPriority)
	assert.Equal(t, time.Minute, o.Eviction.PressureTransitionPeriod)
	want, err := eviction.ParseThresholds("memory.available<200Mi", "nodefs.available<20%", "nodefs.available=1m", "")
	require.NoError(t, err)
	assert.Equal(t, want, o.Eviction.Thresholds)
	assert.Equal(t, "unix:///crio.sock", cfg.RuntimeEndpoint)
	assert.Equal(t, time.Minute, cfg.RuntimeRequestTimeout)
	assert.Equal(t, 4, cfg.Verbosity)
	assert.Equal(t, []string{"10.96.0.10", "fd00::a"}, o.Node.ClusterDNS)
	assert.Equal(t, "cluster.local", o.Node.ClusterDomain)
	assert.Equal(t, agent.ResolvConfNone, o.Node.ResolvConf)
	assert.Equal(t, int64(500), o.Node.MaxPods)
	assert.Equal(t, int32(3), o.Node.MaxParallelImagePulls)
	cl := cfg.Cluster
	assert.False(t, cl.WebhookAuthentication)
	assert.False(t, cl.WebhookAuthorization)
	assert.False(t, cl.RegisterNode)
	assert.Equal(t, float32(20), cl.KubeAPIQPS)
	assert.Equal(t, 30, cl.KubeAPIBurst)
	assert.Equal(t, "kind://docker/kind/n1", cl.ProviderID)
	assert.Equal(t, []v1.Taint{{Key: "edge", Effect: v1.TaintEffectNoSchedule}}, cl.RegisterWithTaints)
	err = cl.Standalone()
	var unsupported *kubeletconfig.UnsupportedError
	require.ErrorAs(t, err, &unsupported)
	assert.Equal(t, []string{"registerWithTaints", "providerID"}, unsupported.Fields())
}

// Fields the node does not implement are refused by name when they are
// not upstream's default (or the value that says what the node does),
// every one in one error.
func TestConvertRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(kc *kubeletv1beta1.KubeletConfiguration)
		want []string
		msg  string
	}{
		{"qos reserved", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.QOSReserved = map[string]string{"memory": "50%"} },
			[]string{"qosReserved"}, `kubelet config: qosReserved`},
		{"several", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.PodsPerCore = 10
			kc.StaticPodURLHeader = map[string][]string{"a": {"b"}}
			kc.EvictionMaxPodGracePeriod = 30
		}, []string{"staticPodURLHeader", "evictionMaxPodGracePeriod", "podsPerCore"}, `podsPerCore 10: not supported by this node`},
		{"gates", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.FeatureGates = map[string]bool{"CPUManager": true, "MemoryQoS": false, "NodeSwap": false, "EventedPLEG": false}
		}, []string{"featureGates.CPUManager", "featureGates.NodeSwap"}, "featureGates.CPUManager true"},
		{"enforce reserved", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.EnforceNodeAllocatable, kc.SystemReservedCgroup = []string{"pods", "system-reserved"}, "/system.slice"
		}, []string{"enforceNodeAllocatable", "systemReservedCgroup"}, `enforceNodeAllocatable "system-reserved"`},
		{"check frequencies", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HTTPCheckFrequency = duration(time.Second) },
			[]string{"httpCheckFrequency"}, `httpCheckFrequency "1s"`},
		{"json logs", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.Logging.Format = "json" },
			[]string{"logging.format"}, `logging.format "json"`},
		{"swap", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.MemorySwap.SwapBehavior = "LimitedSwap" },
			[]string{"memorySwap"}, `memorySwap {"swapBehavior":"LimitedSwap"}`},
		// What gates on by default in 1.36 let validation pass, the node
		// does not do: refused by name, not as invalid.
		{"gates on in 1.36", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.Tracing = &tracingapi.TracingConfiguration{Endpoint: ptrTo("localhost:4317")} // KubeletTracing
		}, []string{"tracing"}, `tracing {"endpoint":"localhost:4317"}: not supported by this node`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, tc.set)
			require.ErrorIs(t, err, kubeletconfig.ErrUnsupported)
			var unsupported *kubeletconfig.UnsupportedError
			require.True(t, errors.As(err, &unsupported))
			assert.ElementsMatch(t, tc.want, unsupported.Fields())
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// featureGates as upstream's kubelet takes them, as far as the node can
// honour them: a gate whose behaviour the node always has may be said on,
// not off; one it lacks may be said off, not on; a gate of the API server,
// the scheduler, the controllers or kube-proxy either way; a gate whose
// configuration is refused by name either way; an unknown name never.
func TestConvertGates(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]bool
		want  []string // the refused fields
		msg   string
	}{
		{gates: map[string]bool{"SidecarContainers": true, "InPlacePodVerticalScaling": true, "ContainerRestartRules": true, "DynamicResourceAllocation": true}},
		{gates: map[string]bool{"SidecarContainers": false}, want: []string{"featureGates.SidecarContainers"},
			msg: "featureGates.SidecarContainers false: not supported by this node (always on in this node)"},
		{gates: map[string]bool{"ImageVolume": true}},
		{gates: map[string]bool{"ResourceHealthStatusMessage": false, "CSIServiceAccountTokenSecrets": false}},
		{gates: map[string]bool{"ResourceHealthStatusMessage": true}, want: []string{"featureGates.ResourceHealthStatusMessage"},
			msg: "featureGates.ResourceHealthStatusMessage true: not supported by this node (not implemented by this node)"},
		{gates: map[string]bool{"SchedulerQueueingHints": false, "NFTablesProxyMode": true, "JobManagedBy": true}},
		{gates: map[string]bool{"KubeletTracing": false, "CPUManagerPolicyOptions": true}},
		{gates: map[string]bool{"GracefulNodeShutdownBasedOnPodPriority": false, "EventedPLEG": true}},
		{gates: map[string]bool{"MemoryQoS": false}},
		// What upstream's CPU and memory manager e2e specs set.
		{gates: map[string]bool{"CPUManagerPolicyBetaOptions": false, "CPUManagerPolicyAlphaOptions": false,
			"DisableCPUQuotaWithExclusiveCPUs": false, "PodLevelResources": false,
			"InPlacePodLevelResourcesVerticalScaling": false, "PodLevelResourceManagers": false, "CustomCPUCFSQuotaPeriod": false}},
		{gates: map[string]bool{"PodLevelResourceManagers": true}, want: []string{"featureGates.PodLevelResourceManagers"},
			msg: "featureGates.PodLevelResourceManagers true: not supported by this node"},
		{gates: map[string]bool{"MemoryQoS": true, "NoSuchGate": false}, want: []string{"featureGates.MemoryQoS", "featureGates.NoSuchGate"},
			msg: "featureGates.MemoryQoS true: not supported by this node"},
	} {
		t.Run(fmt.Sprint(tc.gates), func(t *testing.T) {
			_, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.FeatureGates = tc.gates })
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			var unsupported *kubeletconfig.UnsupportedError
			require.True(t, errors.As(err, &unsupported), "%v", err)
			assert.ElementsMatch(t, tc.want, unsupported.Fields())
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// Values that cannot be read are errors naming the field, beside the
// refusals.
func TestConvertInvalid(t *testing.T) {
	_, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.TLSMinVersion, kc.TLSCipherSuites, kc.TLSCertFile = "VersionTLS9", []string{"TLS_NOPE"}, "/c"
		kc.KubeReserved = map[string]string{"gpu": "1"}
		kc.EvictionSoft = map[string]string{"memory.available": "1Gi"}
		kc.ContainerLogMaxSize = "ten"
		kc.ClusterDNS = []string{"kube-dns"}
		kc.Authorization.Mode = "RBAC"
		kc.PodsPerCore = 10
		kc.ReservedSystemCPUs = "3-1"
	})
	require.ErrorIs(t, err, kubeletconfig.ErrUnsupported)
	for _, want := range []string{`tlsMinVersion "VersionTLS9"`, `tlsCipherSuites: "TLS_NOPE"`, `tlsCertFile "/c" and tlsPrivateKeyFile ""`,
		`kubeReserved: cannot reserve "gpu"`, "grace period must be specified", `containerLogMaxSize "ten"`,
		`authorization.mode "RBAC": must be AlwaysAllow or Webhook`, `podsPerCore 10`,
		`unable to parse reservedSystemCPUs (--reserved-cpus) "3-1"`, `clusterDNS: "kube-dns" is not an IP address`} {
		assert.ErrorContains(t, err, want)
	}
}

// healthzPort and healthzBindAddress are the healthz port's address, as
// upstream's: its default 127.0.0.1:10248, and 0 for none.
func TestConvertHealthz(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(kc *kubeletv1beta1.KubeletConfiguration)
		want string // "": none
	}{
		{"the default", func(*kubeletv1beta1.KubeletConfiguration) {}, "127.0.0.1:10248"},
		{"another port", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HealthzPort = ptrTo[int32](10249) }, "127.0.0.1:10249"},
		{"every interface", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HealthzBindAddress = "0.0.0.0" }, "0.0.0.0:10248"},
		{"IPv6", func(kc *kubeletv1beta1.KubeletConfiguration) { kc.HealthzBindAddress = "::1" }, "[::1]:10248"},
		{"0, none", func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.HealthzPort, kc.HealthzBindAddress = ptrTo[int32](0), "0.0.0.0"
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := convert(t, tc.set)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, cfg.Agent.HTTP.Healthz)
				return
			}
			require.NotNil(t, cfg.Agent.HTTP.Healthz)
			assert.Equal(t, tc.want, cfg.Agent.HTTP.Healthz.Listen)
		})
	}
}

// The values that say what the node does are accepted beside upstream's
// defaults: no pprof, no swap check.
func TestConvertOffValues(t *testing.T) {
	cfg, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.EnableProfilingHandler, kc.FailSwapOn = ptrTo(false), ptrTo(false)
		kc.EnableServer = ptrTo(false)
		kc.HairpinMode = kubeletv1beta1.HairpinVeth // ignored, as upstream does with a CRI runtime
		kc.EnforceNodeAllocatable = []string{"none"}
		kc.EvictionHard = map[string]string{}
		kc.SerializeImagePulls = ptrTo(false)
	})
	require.NoError(t, err)
	assert.Equal(t, int32(-1), cfg.Agent.Node.MaxParallelImagePulls, "serializeImagePulls false without a bound")
	assert.Nil(t, cfg.Agent.HTTP.API)
	assert.Empty(t, cfg.Agent.Cgroups.EnforceNodeAllocatable)
	assert.Equal(t, []eviction.Threshold{}, cfg.Agent.Eviction.Thresholds, "no thresholds, not the defaults")
}

// imagePullCredentialsVerificationPolicy and its allowlist reach the
// records of pulled images (Node.PulledImages); the policy's default is
// upstream's, and the KubeletEnsureSecretPulledImages gate off keeps no
// records.
func TestConvertPulledImages(t *testing.T) {
	cfg, err := convert(t, func(*kubeletv1beta1.KubeletConfiguration) {})
	require.NoError(t, err)
	assert.Equal(t, agent.PulledImagesOptions{VerificationPolicy: pullrecords.NeverVerifyPreloadedImages}, cfg.Agent.Node.PulledImages)

	cfg, err = convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.FeatureGates = map[string]bool{"KubeletEnsureSecretPulledImages": true}
		kc.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyAllowlistedImages
		kc.PreloadedImagesVerificationAllowlist = []string{"registry.k8s.io/pause", "registry.example/public/*"}
	})
	require.NoError(t, err)
	assert.Equal(t, agent.PulledImagesOptions{VerificationPolicy: pullrecords.NeverVerifyAllowlistedImages,
		Allowlist: []string{"registry.k8s.io/pause", "registry.example/public/*"}}, cfg.Agent.Node.PulledImages)

	cfg, err = convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.FeatureGates = map[string]bool{"KubeletEnsureSecretPulledImages": false}
	})
	require.NoError(t, err)
	assert.Equal(t, agent.PulledImagesOptions{Off: true}, cfg.Agent.Node.PulledImages)
	assert.False(t, cfg.FeatureGates["KubeletEnsureSecretPulledImages"])
}

// enableSystemLogHandler (on by default) serves /var/log/ under /logs/,
// enableSystemLogQuery its ?query=; the NodeLogQuery gate off is honoured,
// since validation then refuses enableSystemLogQuery.
func TestConvertNodeLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(kc *kubeletv1beta1.KubeletConfiguration)
		dir   string
		query bool
	}{
		{name: "defaults", set: func(*kubeletv1beta1.KubeletConfiguration) {}, dir: "/var/log/"},
		{name: "query", set: func(kc *kubeletv1beta1.KubeletConfiguration) { kc.EnableSystemLogQuery = ptrTo(true) }, dir: "/var/log/", query: true},
		{name: "handler off", set: func(kc *kubeletv1beta1.KubeletConfiguration) { kc.EnableSystemLogHandler = ptrTo(false) }},
		{name: "gate off", set: func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.FeatureGates = map[string]bool{"NodeLogQuery": false}
		},
			dir: "/var/log/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := convert(t, tc.set)
			require.NoError(t, err)
			require.NotNil(t, cfg.Agent.HTTP.API)
			assert.Equal(t, tc.dir, cfg.Agent.HTTP.API.NodeLogDir)
			assert.Equal(t, tc.query, cfg.Agent.HTTP.API.NodeLogQuery)
		})
	}
	for _, tc := range []struct {
		name string
		set  func(kc *kubeletv1beta1.KubeletConfiguration)
		err  string
	}{
		{name: "query without the handler", set: func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.EnableSystemLogHandler, kc.EnableSystemLogQuery = ptrTo(false), ptrTo(true)
		}, err: "invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery"},
		{name: "query without the gate", set: func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.EnableSystemLogQuery, kc.FeatureGates = ptrTo(true), map[string]bool{"NodeLogQuery": false}
		}, err: "invalid configuration: NodeLogQuery feature gate is required for enableSystemLogQuery"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := &kubeletv1beta1.KubeletConfiguration{}
			tc.set(kc)
			kubeletconfig.SetDefaults(kc)
			err := kubeletconfig.Validate(kc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// KubeletSeparateDiskGC: on (its default) is accepted, off is refused by
// name; the containerfs keys of evictionHard and evictionSoft are read as
// upstream reads them (no validation message, with or without a split
// disk), and the eviction manager replaces them at its first pass
// (eviction.ContainerFsThresholds).
func TestConvertSeparateDiskGC(t *testing.T) {
	cfg, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.FeatureGates = map[string]bool{"KubeletSeparateDiskGC": true}
		kc.EvictionHard = map[string]string{"nodefs.available": "10%", "containerfs.available": "20%", "containerfs.inodesFree": "5%"}
		kc.EvictionSoft = map[string]string{"containerfs.available": "30%"}
		kc.EvictionSoftGracePeriod = map[string]string{"containerfs.available": "1m"}
	})
	require.NoError(t, err)
	assert.True(t, cfg.FeatureGates["KubeletSeparateDiskGC"])
	want, err := eviction.ParseThresholds("containerfs.available<20%,containerfs.inodesFree<5%,nodefs.available<10%",
		"containerfs.available<30%", "containerfs.available=1m", "")
	require.NoError(t, err)
	assert.Equal(t, want, cfg.Agent.Eviction.Thresholds)

	cfg, err = convert(t, func(*kubeletv1beta1.KubeletConfiguration) {})
	require.NoError(t, err)
	assert.True(t, cfg.FeatureGates["KubeletSeparateDiskGC"], "on by default")

	_, err = convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.FeatureGates = map[string]bool{"KubeletSeparateDiskGC": false}
	})
	var unsupported *kubeletconfig.UnsupportedError
	require.ErrorAs(t, err, &unsupported)
	assert.Equal(t, "featureGates.KubeletSeparateDiskGC", unsupported.Refused[0].Field)
	assert.Contains(t, err.Error(), "always on in this node")
}

// The CPU manager's and the topology manager's fields reach the agent's
// Options.Resources; the blocks check the policies and options.
func TestConvertResourceManagers(t *testing.T) {
	cfg, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.CPUManagerPolicy = "static"
		kc.CPUManagerPolicyOptions = map[string]string{"full-pcpus-only": "true"}
		kc.CPUManagerReconcilePeriod = duration(5 * time.Second)
		kc.ReservedSystemCPUs = "0,4"
		kc.KubeReserved = map[string]string{"cpu": "500m", "memory": "1Gi"}
		kc.TopologyManagerPolicy = "single-numa-node"
		kc.TopologyManagerScope = "pod"
		kc.TopologyManagerPolicyOptions = map[string]string{"max-allowable-numa-nodes": "16"}
		kc.MemoryManagerPolicy = "Static"
		kc.ReservedMemory = []kubeletv1beta1.MemoryReservation{{NumaNode: 0, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}
	})
	require.NoError(t, err)
	r := cfg.Agent.Resources
	assert.Equal(t, "static", r.CPUManagerPolicy)
	assert.Equal(t, map[string]string{"full-pcpus-only": "true"}, r.CPUManagerPolicyOptions)
	assert.Equal(t, 5*time.Second, r.CPUManagerReconcilePeriod)
	assert.Equal(t, "0,4", r.ReservedSystemCPUs.String())
	// As upstream: the reserved CPUs are the system's reserved cpu, kubeReserved's cpu dropped.
	assert.Equal(t, "2", cfg.Agent.Node.SystemReserved.Cpu().String())
	_, kubeCPU := cfg.Agent.Node.KubeReserved[v1.ResourceCPU]
	assert.False(t, kubeCPU)
	assert.Equal(t, "single-numa-node", r.TopologyManagerPolicy)
	assert.Equal(t, "pod", r.TopologyManagerScope)
	assert.Equal(t, map[string]string{"max-allowable-numa-nodes": "16"}, r.TopologyManagerPolicyOptions)
	assert.Equal(t, "Static", r.MemoryManagerPolicy)
	require.Len(t, r.ReservedMemory, 1)
	assert.Equal(t, "1Gi", r.ReservedMemory[0].Limits.Memory().String())
}

// The gates the node honours either way map to the agent's options: off,
// pods holding exclusive CPUs keep their CFS quota, pod-level resources
// are refused and their resizes infeasible; by default none of that.
func TestConvertResourceGates(t *testing.T) {
	cfg, err := convert(t, func(kc *kubeletv1beta1.KubeletConfiguration) {
		kc.FeatureGates = map[string]bool{"DisableCPUQuotaWithExclusiveCPUs": false, "PodLevelResources": false,
			"InPlacePodLevelResourcesVerticalScaling": false, "KubeletPodResourcesListUseActivePods": false}
	})
	require.NoError(t, err)
	r := cfg.Agent.Resources
	assert.True(t, r.KeepCPUQuotaWithExclusiveCPUs)
	assert.True(t, r.DisablePodLevelResources)
	assert.True(t, r.DisablePodLevelResize)
	assert.True(t, cfg.Agent.HTTP.PodResourcesListAllPods)

	cfg, err = convert(t, func(*kubeletv1beta1.KubeletConfiguration) {})
	require.NoError(t, err)
	r = cfg.Agent.Resources
	assert.False(t, r.KeepCPUQuotaWithExclusiveCPUs || r.DisablePodLevelResources || r.DisablePodLevelResize)
	assert.False(t, cfg.Agent.HTTP.PodResourcesListAllPods)
}
