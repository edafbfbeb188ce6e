package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
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

// /configz reports the settings minikubelet runs with: its flags' values,
// upstream's defaults where it keeps them, and "none" where it has no
// counterpart (QoS cgroups, node allocatable enforcement).
func TestConfigzDefaults(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	got := configz(t, dir)
	require.NotNil(t, got)
	want := &kubeletconfig.KubeletConfiguration{
		TypeMeta:                metav1.TypeMeta{Kind: "KubeletConfiguration", APIVersion: "kubelet.config.k8s.io/v1beta1"},
		EnableServer:            ptr.To(true),
		StaticPodPath:           filepath.Join(dir, "manifests"),
		PodLogsDir:              filepath.Join(root, "logs"),
		SyncFrequency:           duration(time.Minute),
		FileCheckFrequency:      duration(20 * time.Second),
		HTTPCheckFrequency:      duration(20 * time.Second),
		Address:                 "0.0.0.0",
		Port:                    10250,
		ReadOnlyPort:            0,
		TLSCertFile:             filepath.Join(root, "pki", "kubelet.crt"),
		TLSPrivateKeyFile:       filepath.Join(root, "pki", "kubelet.key"),
		TLSMinVersion:           "VersionTLS12",
		EnableDebuggingHandlers: ptr.To(true),
		EnableProfilingHandler:  ptr.To(false),
		EnableDebugFlagsHandler: ptr.To(false),
		SeccompDefault:          ptr.To(false),
		EnableSystemLogHandler:  ptr.To(false),
		EnableSystemLogQuery:    ptr.To(false),
		HealthzPort:             ptr.To[int32](0),
		Authentication: kubeletconfig.KubeletAuthentication{
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:                    kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow},
		NodeStatusUpdateFrequency:        duration(10 * time.Second),
		ImageMinimumGCAge:                duration(2 * time.Minute),
		ImageGCHighThresholdPercent:      ptr.To[int32](85),
		ImageGCLowThresholdPercent:       ptr.To[int32](80),
		CgroupsPerQOS:                    ptr.To(false),
		EnforceNodeAllocatable:           []string{"none"},
		CPUManagerPolicy:                 "none",
		MemoryManagerPolicy:              "None",
		TopologyManagerPolicy:            "none",
		FailSwapOn:                       ptr.To(false),
		MaxPods:                          110,
		ResolverConfig:                   ptr.To("/etc/resolv.conf"),
		EvictionHard:                     map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"},
		EvictionPressureTransitionPeriod: duration(5 * time.Minute),
		MergeDefaultEvictionSettings:     ptr.To(false),
		LocalStorageCapacityIsolation:    ptr.To(true),
		ContainerLogMaxSize:              "10Mi",
		ContainerLogMaxFiles:             ptr.To[int32](5),
		ContainerLogMonitorInterval:      &metav1.Duration{Duration: 10 * time.Second},
		FeatureGates:                     map[string]bool{"EventedPLEG": false, "ExtendWebSocketsToKubelet": true},
		RegisterNode:                     ptr.To(false),
	}
	// Logging is not set; decoded, its zero quantities differ from Go's
	// zero value only in their cached text.
	got.Logging = want.Logging
	assert.Equal(t, want, got)
}

func TestConfigzFromFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
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
			assert.Equal(t, map[string]bool{"EventedPLEG": true, "ExtendWebSocketsToKubelet": true}, kc.FeatureGates)
		},
	}, {
		name: "no WebSockets on the kubelet API", args: []string{"--extend-websockets-to-kubelet=false"},
		check: func(t *testing.T, kc *kubeletconfig.KubeletConfiguration) {
			assert.Equal(t, map[string]bool{"EventedPLEG": false, "ExtendWebSocketsToKubelet": false}, kc.FeatureGates)
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
			assert.Equal(t, kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow}, kc.Authorization)
			assert.Equal(t, ptr.To(false), kc.Authentication.Webhook.Enabled)
			assert.Equal(t, ptr.To(false), kc.RegisterNode)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, configz(t, t.TempDir(), tc.args...))
		})
	}
}
