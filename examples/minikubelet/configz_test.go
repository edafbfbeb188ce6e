package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
)

// configz builds the options of minikubelet's flags (args, after a root
// dir and a manifest directory under dir) and returns what /configz would
// answer, decoded as the node e2e suite decodes it: the body's
// "kubeletconfig" into a v1beta1.KubeletConfiguration, unknown fields
// refused. It returns nil when there is no /configz.
func configz(t *testing.T, dir string, args ...string) *kubeletconfig.KubeletConfiguration {
	t.Helper()
	args = append([]string{"--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", filepath.Join(dir, "manifests"), "--node-name", "edge1"}, args...)
	c, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	opts, _, err := options(c, io.Discard, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	if opts.HTTP.API == nil || opts.HTTP.API.Configz == nil {
		return nil
	}
	v, err := opts.HTTP.API.Configz.KubeletConfig()
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"kubeletconfig": v})
	require.NoError(t, err)
	var wrapper struct {
		KubeletConfig kubeletconfig.KubeletConfiguration `json:"kubeletconfig"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&wrapper), "%s", body)
	return &wrapper.KubeletConfig
}

func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// /configz reports the configuration minikubelet runs with: without
// --config, upstream's defaults under its flags' defaults, and what the
// node does where it accepts a default it does not act on.
func TestConfigzDefaults(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	got := configz(t, dir)
	require.NotNil(t, got)
	assert.Equal(t, metav1.TypeMeta{Kind: "KubeletConfiguration", APIVersion: "kubelet.config.k8s.io/v1beta1"}, got.TypeMeta)
	assert.Equal(t, ptr.To(true), got.EnableServer)
	assert.Equal(t, filepath.Join(dir, "manifests"), got.StaticPodPath)
	assert.Equal(t, filepath.Join(root, "logs"), got.PodLogsDir)
	assert.Equal(t, duration(time.Minute), got.SyncFrequency)
	assert.Equal(t, duration(20*time.Second), got.FileCheckFrequency)
	assert.Equal(t, duration(20*time.Second), got.HTTPCheckFrequency)
	assert.Equal(t, "0.0.0.0", got.Address)
	assert.Equal(t, int32(10250), got.Port)
	assert.Zero(t, got.ReadOnlyPort)
	assert.Equal(t, filepath.Join(root, "pki", "kubelet.crt"), got.TLSCertFile)
	assert.Equal(t, filepath.Join(root, "pki", "kubelet.key"), got.TLSPrivateKeyFile)
	assert.Equal(t, "VersionTLS12", got.TLSMinVersion)
	assert.Equal(t, ptr.To(true), got.EnableDebuggingHandlers)
	// Upstream's defaults the node does not act on, as it runs.
	assert.Equal(t, ptr.To(false), got.EnableProfilingHandler)
	assert.Equal(t, ptr.To(false), got.EnableDebugFlagsHandler)
	assert.Equal(t, ptr.To(true), got.EnableSystemLogHandler, "/logs/ served")
	assert.Equal(t, ptr.To(false), got.EnableSystemLogQuery)
	assert.Equal(t, ptr.To[int32](10248), got.HealthzPort, "upstream's, served")
	assert.Equal(t, "127.0.0.1", got.HealthzBindAddress)
	assert.Equal(t, ptr.To(false), got.FailSwapOn)
	assert.Equal(t, ptr.To(true), got.SerializeImagePulls)
	assert.Nil(t, got.MaxParallelImagePulls)
	assert.Equal(t, kubeletconfig.NeverVerifyPreloadedImages, got.ImagePullCredentialsVerificationPolicy, "upstream's default, run")
	assert.Equal(t, ptr.To("/etc/resolv.conf"), got.ResolverConfig)
	assert.Empty(t, got.ClusterDNS)
	assert.Equal(t, ptr.To(false), got.SeccompDefault)
	assert.Equal(t, ptr.To(false), got.Authentication.Webhook.Enabled)
	assert.Equal(t, ptr.To(false), got.Authentication.Anonymous.Enabled)
	assert.Equal(t, kubeletconfig.KubeletAuthorizationModeAlwaysAllow, got.Authorization.Mode)
	assert.Equal(t, duration(10*time.Second), got.NodeStatusUpdateFrequency)
	assert.Equal(t, duration(2*time.Minute), got.ImageMinimumGCAge)
	assert.Equal(t, ptr.To[int32](85), got.ImageGCHighThresholdPercent)
	assert.Equal(t, ptr.To[int32](80), got.ImageGCLowThresholdPercent)
	// The embedded fake runtime: no pod cgroups, nothing enforced.
	assert.Empty(t, got.ContainerRuntimeEndpoint)
	assert.Equal(t, ptr.To(false), got.CgroupsPerQOS)
	assert.Equal(t, []string{"none"}, got.EnforceNodeAllocatable)
	assert.Empty(t, got.CgroupDriver)
	assert.Equal(t, "none", got.CPUManagerPolicy)
	assert.Equal(t, "None", got.MemoryManagerPolicy)
	assert.Equal(t, "none", got.TopologyManagerPolicy)
	assert.Equal(t, int32(110), got.MaxPods)
	assert.Equal(t, map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"}, got.EvictionHard)
	assert.Equal(t, duration(5*time.Minute), got.EvictionPressureTransitionPeriod)
	assert.Equal(t, ptr.To(false), got.MergeDefaultEvictionSettings)
	assert.Equal(t, ptr.To(true), got.LocalStorageCapacityIsolation)
	assert.Equal(t, "10Mi", got.ContainerLogMaxSize)
	assert.Equal(t, ptr.To[int32](5), got.ContainerLogMaxFiles)
	assert.Equal(t, &metav1.Duration{Duration: 10 * time.Second}, got.ContainerLogMonitorInterval)
	assert.Equal(t, map[string]bool{"EventedPLEG": false, "ExtendWebSocketsToKubelet": true, "KubeletEnsureSecretPulledImages": true}, got.FeatureGates)
	assert.Equal(t, ptr.To(false), got.RegisterNode)
}

func TestConfigzFromFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := kubeconfigFile(t, dir)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, kc *kubeletconfig.KubeletConfiguration)
	}{{
		name: "no kubelet API, no /configz", args: []string{"--port", "0"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) { assert.Nil(t, kc) },
	}, {
		name: "unsafe sysctls", args: []string{"--allowed-unsafe-sysctls", "kernel.msg*,net.core.somaxconn"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, []string{"kernel.msg*", "net.core.somaxconn"}, kc.AllowedUnsafeSysctls)
		},
	}, {
		name: "reservations", args: []string{"--kube-reserved", "cpu=100m,memory=100Mi", "--system-reserved", "ephemeral-storage=1Gi,pid=1000"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, map[string]string{"cpu": "100m", "memory": "100Mi"}, kc.KubeReserved)
			assert.Equal(t, map[string]string{"ephemeral-storage": "1Gi", "pid": "1000"}, kc.SystemReserved)
		},
	}, {
		name: "cluster DNS", args: []string{"--cluster-dns", "10.96.0.10,fd00::a", "--cluster-dns", "10.96.0.11", "--cluster-domain", "cluster.local", "--resolv-conf", ""},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, []string{"10.96.0.10", "fd00::a", "10.96.0.11"}, kc.ClusterDNS)
			assert.Equal(t, "cluster.local", kc.ClusterDomain)
			assert.Equal(t, ptr.To(""), kc.ResolverConfig)
		},
	}, {
		name: "pods capacity and image pulls", args: []string{"--max-pods", "500", "--serialize-image-pulls=false", "--max-parallel-image-pulls", "4"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, int32(500), kc.MaxPods)
			assert.Equal(t, ptr.To(false), kc.SerializeImagePulls)
			assert.Equal(t, ptr.To[int32](4), kc.MaxParallelImagePulls)
		},
	}, {
		name: "CFS period", args: []string{"--cpu-cfs-quota-period", "50ms"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, &metav1.Duration{Duration: 50 * time.Millisecond}, kc.CPUCFSQuotaPeriod)
		},
	}, {
		name: "CPU and topology managers", args: []string{"--cpu-manager-policy", "static", "--cpu-manager-policy-options", "full-pcpus-only=true",
			"--reserved-cpus", "0", "--cpu-manager-reconcile-period", "5s", "--topology-manager-policy", "best-effort", "--topology-manager-scope", "pod"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, "static", kc.CPUManagerPolicy)
			assert.Equal(t, map[string]string{"full-pcpus-only": "true"}, kc.CPUManagerPolicyOptions)
			assert.Equal(t, "0", kc.ReservedSystemCPUs)
			assert.Equal(t, metav1.Duration{Duration: 5 * time.Second}, kc.CPUManagerReconcilePeriod)
			assert.Equal(t, "best-effort", kc.TopologyManagerPolicy)
			assert.Equal(t, "pod", kc.TopologyManagerScope)
		},
	}, {
		name: "memory manager", args: []string{"--memory-manager-policy", "Static", "--reserved-memory", "0:memory=1Gi,hugepages-2Mi=64Mi;1:memory=2Gi",
			"--reserved-memory", "2:memory=512Mi"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, "Static", kc.MemoryManagerPolicy)
			require.Len(t, kc.ReservedMemory, 3)
			assert.Equal(t, int32(1), kc.ReservedMemory[1].NumaNode)
			assert.Equal(t, "64Mi", kc.ReservedMemory[0].Limits.Name("hugepages-2Mi", resource.BinarySI).String())
			assert.Equal(t, "512Mi", kc.ReservedMemory[2].Limits.Memory().String())
		},
	}, {
		name: "CFS period, upstream's default", args: nil,
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, &metav1.Duration{Duration: 100 * time.Millisecond}, kc.CPUCFSQuotaPeriod)
		},
	}, {
		name: "seccomp default off, as upstream", args: nil,
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, ptr.To(false), kc.SeccompDefault)
		},
	}, {
		name: "seccomp default", args: []string{"--seccomp-default"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, ptr.To(true), kc.SeccompDefault)
		},
	}, {
		name: "the healthz port", args: []string{"--healthz-port", "10249", "--healthz-bind-address", "::1"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, ptr.To[int32](10249), kc.HealthzPort)
			assert.Equal(t, "::1", kc.HealthzBindAddress)
		},
	}, {
		name: "no healthz port", args: []string{"--healthz-port", "0"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, ptr.To[int32](0), kc.HealthzPort)
		},
	}, {
		name: "pod logs elsewhere", args: []string{"--pod-logs-dir", "/var/log/pods"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, "/var/log/pods", kc.PodLogsDir)
		},
	}, {
		name: "the API's flags",
		args: []string{"--address", "127.0.0.1", "--port", "11250", "--read-only-port", "0", "--tls-cert-file", "/etc/kubelet/tls.crt",
			"--tls-private-key-file", "/etc/kubelet/tls.key", "--client-ca-file", "/etc/kubernetes/ca.crt", "--anonymous-auth"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, "127.0.0.1", kc.Address)
			assert.Equal(t, int32(11250), kc.Port)
			assert.Zero(t, kc.ReadOnlyPort)
			assert.Equal(t, "/etc/kubelet/tls.crt", kc.TLSCertFile)
			assert.Equal(t, "/etc/kubelet/tls.key", kc.TLSPrivateKeyFile)
			assert.Equal(t, "/etc/kubernetes/ca.crt", kc.Authentication.X509.ClientCAFile)
			assert.Equal(t, ptr.To(true), kc.Authentication.Anonymous.Enabled)
		},
	}, {
		name: "a certificate directory", args: []string{"--cert-dir", "/var/lib/kubelet/pki"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, "/var/lib/kubelet/pki/kubelet.crt", kc.TLSCertFile)
			assert.Equal(t, "/var/lib/kubelet/pki/kubelet.key", kc.TLSPrivateKeyFile)
		},
	}, {
		name: "eviction, image GC, logs, node status, evented PLEG",
		args: []string{"--eviction-hard", "memory.available<1Gi,nodefs.available<5%", "--eviction-soft", "nodefs.available<20%",
			"--eviction-soft-grace-period", "nodefs.available=1m30s", "--eviction-minimum-reclaim", "memory.available=500Mi",
			"--image-gc-high-threshold", "90", "--image-gc-low-threshold", "70", "--minimum-image-ttl-duration", "5m",
			"--container-log-max-size", "1Mi", "--container-log-max-files", "3", "--node-status-update-frequency", "20s", "--evented-pleg"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, map[string]string{"memory.available": "1Gi", "nodefs.available": "5%"}, kc.EvictionHard)
			assert.Equal(t, map[string]string{"nodefs.available": "20%"}, kc.EvictionSoft)
			assert.Equal(t, map[string]string{"nodefs.available": "1m30s"}, kc.EvictionSoftGracePeriod)
			assert.Equal(t, map[string]string{"memory.available": "500Mi"}, kc.EvictionMinimumReclaim)
			assert.Equal(t, ptr.To[int32](90), kc.ImageGCHighThresholdPercent)
			assert.Equal(t, ptr.To[int32](70), kc.ImageGCLowThresholdPercent)
			assert.Equal(t, duration(5*time.Minute), kc.ImageMinimumGCAge)
			assert.Equal(t, "1Mi", kc.ContainerLogMaxSize)
			assert.Equal(t, ptr.To[int32](3), kc.ContainerLogMaxFiles)
			assert.Equal(t, duration(20*time.Second), kc.NodeStatusUpdateFrequency)
			assert.Equal(t, map[string]bool{"EventedPLEG": true, "ExtendWebSocketsToKubelet": true, "KubeletEnsureSecretPulledImages": true}, kc.FeatureGates)
		},
	}, {
		name: "no WebSockets on the kubelet API", args: []string{"--extend-websockets-to-kubelet=false"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, map[string]bool{"EventedPLEG": false, "ExtendWebSocketsToKubelet": false, "KubeletEnsureSecretPulledImages": true}, kc.FeatureGates)
		},
	}, {
		name: "no eviction thresholds", args: []string{"--eviction-hard", ""},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) { assert.Empty(t, kc.EvictionHard) },
	}, {
		name: "graceful node shutdown", args: []string{"--shutdown-grace-period", "30s", "--shutdown-grace-period-critical-pods", "10s", "--shutdown-signal", "SIGUSR2"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, duration(30*time.Second), kc.ShutdownGracePeriod)
			assert.Equal(t, duration(10*time.Second), kc.ShutdownGracePeriodCriticalPods)
		},
	}, {
		name: "joined to an API server", args: []string{"--kubeconfig", kubeconfig, "--authentication-token-webhook", "--node-lease-duration-seconds", "60"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Zero(t, kc.ReadOnlyPort, "off by default with --kubeconfig")
			assert.Equal(t, kubeletconfig.KubeletAuthentication{
				Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true), CacheTTL: duration(2 * time.Minute)},
				Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
			}, kc.Authentication)
			assert.Equal(t, kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook,
				Webhook: kubeletconfig.KubeletWebhookAuthorization{CacheAuthorizedTTL: duration(5 * time.Minute), CacheUnauthorizedTTL: duration(30 * time.Second)},
			}, kc.Authorization)
			assert.Equal(t, ptr.To(true), kc.RegisterNode)
			assert.Equal(t, int32(60), kc.NodeLeaseDurationSeconds)
			assert.Equal(t, duration(5*time.Minute), kc.NodeStatusReportFrequency)
			assert.Equal(t, ptr.To[int32](50), kc.KubeAPIQPS)
			assert.Equal(t, int32(100), kc.KubeAPIBurst)
			assert.Empty(t, kc.StaticPodURL)
		},
	}, {
		name: "joined, AlwaysAllow, not registering", args: []string{"--kubeconfig", kubeconfig, "--authorization-mode", "AlwaysAllow", "--register-node=false"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, kubeletconfig.KubeletAuthorizationModeAlwaysAllow, kc.Authorization.Mode)
			assert.Equal(t, ptr.To(false), kc.Authentication.Webhook.Enabled)
			assert.Equal(t, ptr.To(false), kc.RegisterNode)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, configz(t, t.TempDir(), tc.args...))
		})
	}
}

// /configz shows the cgroup driver the node runs with: the runtime's,
// once the agent has started, over the configured one (upstream's
// KubeletCgroupDriverFromCRI, whose kubelet reports the same).
func TestConfigzCgroupDriverFromRuntime(t *testing.T) {
	kc := &kubeletconfig.KubeletConfiguration{CgroupDriver: "systemd"}
	assert.Same(t, kc, runningConfig(kc, nil), "before the agent is built")

	fs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fs, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
	a, err := agent.New(agent.Options{NodeName: "edge1", RootDir: t.TempDir(),
		Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs, Driver: "systemd"}})
	require.NoError(t, err)
	a.FakeRuntime().SetCgroupDriver(runtimeapi.CgroupDriver_CGROUPFS)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("agent stopped: %v", err)
	}
	got := runningConfig(kc, a)
	assert.Equal(t, "cgroupfs", got.CgroupDriver)
	assert.Equal(t, "systemd", kc.CgroupDriver, "the configuration itself is kept")
}
