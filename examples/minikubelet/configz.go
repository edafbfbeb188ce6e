package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// kubeletConfig is what the kubelet API's /configz shows: the settings
// minikubelet runs with, from its flags (c) and the options built from them
// (opts, complete but for the agent's own defaults, which are the blocks'
// exported defaults), in upstream's KubeletConfiguration. A field is set
// only where minikubelet does what upstream's field says; a field it has no
// counterpart for is left out, or set to what upstream means by "none"
// (cgroupsPerQOS false on a fake runtime, whose containers are no
// processes; enforceNodeAllocatable none when nothing is enforced), so
// that a reader such as the node e2e suite learns what the node really
// does.
func kubeletConfig(c *config, opts *agent.Options) (*kubeletconfig.KubeletConfiguration, error) {
	// The agent makes the root directory absolute; so are the paths here,
	// since a reader runs elsewhere.
	root, err := filepath.Abs(opts.RootDir)
	if err != nil {
		return nil, fmt.Errorf("configz: root dir %q: %w", opts.RootDir, err)
	}
	logDir := filepath.Join(root, "logs")
	if opts.Logs.Dir != "" {
		if logDir, err = filepath.Abs(opts.Logs.Dir); err != nil {
			return nil, fmt.Errorf("configz: pod logs dir %q: %w", opts.Logs.Dir, err)
		}
	}
	joined := c.kubeconfig != ""
	kc := &kubeletconfig.KubeletConfiguration{
		TypeMeta:      metav1.TypeMeta{Kind: "KubeletConfiguration", APIVersion: kubeletconfig.SchemeGroupVersion.String()},
		EnableServer:  ptr.To(opts.HTTP.API != nil),
		PodLogsDir:    logDir,
		SyncFrequency: metav1.Duration{Duration: podworkers.DefaultResyncInterval},
		// The manifest directory is watched as well, as upstream's.
		FileCheckFrequency: metav1.Duration{Duration: source.DefaultPeriod},
		HTTPCheckFrequency: metav1.Duration{Duration: source.DefaultPeriod},
		StaticPodURL:       opts.Sources.ManifestURL,
		Address:            c.address,
		TLSMinVersion:      "VersionTLS12",
		// The secure server serves logs, exec, attach, port-forward, run
		// and /runningpods/; no pprof, no node logs, no /debug/flags/v, and
		// no separate healthz server.
		EnableDebuggingHandlers: ptr.To(true),
		EnableProfilingHandler:  ptr.To(false),
		EnableDebugFlagsHandler: ptr.To(false),
		EnableSystemLogHandler:  ptr.To(false),
		EnableSystemLogQuery:    ptr.To(false),
		HealthzPort:             ptr.To[int32](0),

		NodeStatusUpdateFrequency:   metav1.Duration{Duration: c.nodeStatusFrequency},
		ImageMinimumGCAge:           metav1.Duration{Duration: c.imageMinTTL},
		ImageGCHighThresholdPercent: ptr.To(int32(c.imageGCHigh)),
		ImageGCLowThresholdPercent:  ptr.To(int32(c.imageGCLow)),

		// The QoS cgroups and node allocatable enforcement as the agent
		// runs them (cgroupSettings); no CPU, memory or topology manager.
		CPUManagerPolicy:      "none",
		MemoryManagerPolicy:   kubeletconfig.NoneMemoryManagerPolicy,
		TopologyManagerPolicy: kubeletconfig.NoneTopologyManagerPolicy,
		// It does not look at swap.
		FailSwapOn: ptr.To(false),
		// The pods capacity the node reports, which the scheduler and the
		// agent's admission keep to.
		MaxPods: node.DefaultMaxPods,
		// Taken off the capacity, with the hard eviction thresholds, to
		// give the allocatable (enforced on no cgroup).
		KubeReserved:   reservedMap(c.kubeReserved),
		SystemReserved: reservedMap(c.systemReserved),
		// The pods' resolver configuration (package dns).
		ClusterDNS:     opts.Node.ClusterDNS,
		ClusterDomain:  opts.Node.ClusterDomain,
		ResolverConfig: ptr.To(configzResolvConf(opts.Node.ResolvConf)),

		EvictionPressureTransitionPeriod: metav1.Duration{Duration: eviction.DefaultPressureTransitionPeriod},
		// --eviction-hard replaces the default thresholds, it does not add
		// to them.
		MergeDefaultEvictionSettings: ptr.To(false),
		// Pods over their ephemeral-storage limits or emptyDir sizeLimits
		// are evicted.
		LocalStorageCapacityIsolation: ptr.To(true),

		ContainerLogMaxSize:         c.containerLogMaxSize,
		ContainerLogMaxFiles:        ptr.To(int32(c.containerLogMaxFiles)),
		AllowedUnsafeSysctls:        opts.Security.AllowedUnsafeSysctls,
		SeccompDefault:              ptr.To(opts.Security.SeccompDefault),
		ContainerLogMonitorInterval: &metav1.Duration{Duration: logs.DefaultInterval},

		// Graceful node shutdown, triggered by --shutdown-signal (upstream's
		// by logind); 0s: off.
		ShutdownGracePeriod:             metav1.Duration{Duration: opts.Shutdown.GracePeriod},
		ShutdownGracePeriodCriticalPods: metav1.Duration{Duration: opts.Shutdown.GracePeriodCriticalPods},

		ContainerRuntimeEndpoint: c.endpoint, // empty: the embedded fake runtime
		FeatureGates: map[string]bool{"EventedPLEG": c.evented,
			agent.ExtendWebSocketsToKubelet: opts.HTTP.API != nil && opts.HTTP.API.WebSockets != nil},
	}
	cgroupSettings(kc, opts)
	if opts.Sources.ManifestPath != "" {
		if kc.StaticPodPath, err = filepath.Abs(opts.Sources.ManifestPath); err != nil {
			return nil, fmt.Errorf("configz: manifest path %q: %w", opts.Sources.ManifestPath, err)
		}
	}
	if kc.NodeStatusUpdateFrequency.Duration == 0 {
		kc.NodeStatusUpdateFrequency.Duration = node.DefaultStatusUpdatePeriod // what the agent makes of it
	}
	if c.endpoint != "" {
		kc.RuntimeRequestTimeout = metav1.Duration{Duration: cri.DefaultTimeout}
	}
	if opts.HTTP.Listen != "" {
		_, port, err := net.SplitHostPort(opts.HTTP.Listen)
		if err != nil {
			return nil, fmt.Errorf("configz: read-only address %q: %w", opts.HTTP.Listen, err)
		}
		p, err := strconv.ParseInt(port, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("configz: read-only port %q: %w", port, err)
		}
		kc.ReadOnlyPort = int32(p)
	}
	if api := opts.HTTP.API; api != nil {
		kc.Port = int32(c.port)
		kc.TLSCertFile, kc.TLSPrivateKeyFile = api.TLS.CertFile, api.TLS.KeyFile
		if kc.TLSCertFile == "" {
			// The self-signed pair, where the agent keeps it.
			dir := api.TLS.CertDir
			if dir == "" {
				dir = filepath.Join(root, "pki")
			}
			kc.TLSCertFile, kc.TLSPrivateKeyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
		}
		authn := &kc.Authentication
		authn.X509.ClientCAFile = api.TLS.ClientCAFile
		authn.Webhook.Enabled = ptr.To(api.Authenticator != nil)
		if api.Authenticator != nil {
			authn.Webhook.CacheTTL = metav1.Duration{Duration: apiserver.DefaultTokenCacheTTL}
		}
		authn.Anonymous.Enabled = ptr.To(api.Anonymous)
		kc.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeAlwaysAllow
		if api.Authorizer != nil {
			kc.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
			kc.Authorization.Webhook = kubeletconfig.KubeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: apiserver.DefaultAllowCacheTTL},
				CacheUnauthorizedTTL: metav1.Duration{Duration: apiserver.DefaultDenyCacheTTL},
			}
		}
	}
	thresholds := opts.Eviction.Thresholds
	if thresholds == nil {
		thresholds = eviction.DefaultHardThresholds()
	}
	if !opts.Eviction.Disabled {
		evictionMaps(kc, thresholds)
	}
	// Standalone there is no Node to register, no status to post and no
	// lease; joined, these are what examples/apiserver does.
	kc.RegisterNode = ptr.To(joined && c.registerNode)
	if joined {
		kc.NodeStatusReportFrequency = metav1.Duration{Duration: node.DefaultStatusReportPeriod}
		kc.NodeLeaseDurationSeconds = int32(c.nodeLeaseSeconds)
		kc.KubeAPIQPS, kc.KubeAPIBurst = ptr.To(int32(c.kubeAPIQPS)), int32(c.kubeAPIBurst)
	}
	return kc, nil
}

// reservedMap is a reservation flag as upstream's configuration holds it,
// each quantity spelt as given ("cpu": "100m"); nil for none. The agent
// has parsed the flag already.
func reservedMap(flag string) map[string]string {
	if flag == "" {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(flag, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// evictionMaps puts the thresholds in effect into upstream's maps, spelled
// as the flags spell them: hard and soft thresholds, the soft ones' grace
// periods, and the minimum reclaims.
func evictionMaps(kc *kubeletconfig.KubeletConfiguration, ts []eviction.Threshold) {
	set := func(m *map[string]string, k, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	for _, t := range ts {
		sig := string(t.Signal)
		if t.IsHard() {
			set(&kc.EvictionHard, sig, t.Value.String())
		} else {
			set(&kc.EvictionSoft, sig, t.Value.String())
			set(&kc.EvictionSoftGracePeriod, sig, t.GracePeriod.String())
		}
		if t.MinReclaim != nil {
			set(&kc.EvictionMinimumReclaim, sig, t.MinReclaim.String())
		}
	}
}

// cgroupSettings reports the cgroups the agent keeps: with Cgroups.PerQOS,
// the driver, the cgroup root ("/" for none, as upstream reports it) and
// the enforcement; without, cgroupsPerQOS false and no driver (the runtime
// picks the cgroups), and enforcement "none".
func cgroupSettings(kc *kubeletconfig.KubeletConfiguration, opts *agent.Options) {
	kc.CgroupsPerQOS = ptr.To(opts.Cgroups.PerQOS)
	kc.EnforceNodeAllocatable = []string{"none"}
	if len(opts.Cgroups.EnforceNodeAllocatable) > 0 {
		kc.EnforceNodeAllocatable = opts.Cgroups.EnforceNodeAllocatable
	}
	if !opts.Cgroups.PerQOS {
		return
	}
	kc.CgroupDriver = opts.Cgroups.Driver
	kc.CgroupRoot = opts.Cgroups.Root
	if kc.CgroupRoot == "" {
		kc.CgroupRoot = "/"
	}
}

// configzResolvConf is Node.ResolvConf as upstream's resolvConf says it:
// "" for none.
func configzResolvConf(s string) string {
	if s == agent.ResolvConfNone {
		return ""
	}
	return s
}
