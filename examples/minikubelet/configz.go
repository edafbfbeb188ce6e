package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// kubeletConfig is what the kubelet API's /configz shows: the merged
// configuration minikubelet runs with (--config, upstream's defaults,
// --config-dir, the flags given; without --config, minikubelet's flag
// defaults), with the fields whose value the node accepts without acting
// on it set to what it does instead (docs/kubeletconfig.md, "default
// accepted, not implemented"), so that a reader such as the node e2e
// suite learns what the node really does: no pprof or debug flags, no
// swap check, and the
// cgroups and authentication as run. Paths are absolute, since a reader
// runs elsewhere.
func kubeletConfig(c *config, opts *agent.Options) (*kubeletv1beta1.KubeletConfiguration, error) {
	kc := c.kc.DeepCopy()
	kc.APIVersion, kc.Kind = kubeletv1beta1.SchemeGroupVersion.String(), "KubeletConfiguration"
	root, err := filepath.Abs(opts.RootDir)
	if err != nil {
		return nil, fmt.Errorf("configz: root dir %q: %w", opts.RootDir, err)
	}
	if kc.StaticPodPath, err = absOrEmpty(opts.Sources.ManifestPath); err != nil {
		return nil, fmt.Errorf("configz: manifest path: %w", err)
	}
	if c.embedded {
		kc.ContainerRuntimeEndpoint = "" // the embedded fake runtime
	}
	kc.EnableProfilingHandler, kc.EnableDebugFlagsHandler = ptr.To(false), ptr.To(false)
	kc.FailSwapOn = ptr.To(false)
	if kc.EnableSystemLogQuery == nil {
		kc.EnableSystemLogQuery = ptr.To(false) // as upstream's internal configuration reads
	}
	kc.EnableServer = ptr.To(opts.HTTP.API != nil)
	kc.FeatureGates = map[string]bool{"EventedPLEG": opts.EventedPLEG,
		agent.ExtendWebSocketsToKubelet:   opts.HTTP.API != nil && opts.HTTP.API.WebSockets != nil,
		"KubeletEnsureSecretPulledImages": !opts.Node.PulledImages.Off}
	if api := opts.HTTP.API; api != nil {
		if err := apiSettings(kc, api, root); err != nil {
			return nil, err
		}
	}
	cgroupSettings(kc, opts)
	// Standalone there is no Node to register.
	kc.RegisterNode = ptr.To(c.kubeconfig != "" && *kc.RegisterNode)
	return kc, nil
}

// runningConfig is kc with what the running node decided at start: the
// cgroup driver the runtime told (upstream's KubeletCgroupDriverFromCRI,
// whose kubelet shows it in /configz too). kc itself is not changed; with
// no node yet, or no pod cgroups, it is kc.
func runningConfig(kc *kubeletv1beta1.KubeletConfiguration, node *agent.Agent) *kubeletv1beta1.KubeletConfiguration {
	if node == nil {
		return kc
	}
	d := node.CgroupDriver()
	if d == "" || d == kc.CgroupDriver {
		return kc
	}
	out := kc.DeepCopy()
	out.CgroupDriver = d
	return out
}

// absOrEmpty is p made absolute, or "" for "".
func absOrEmpty(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

// apiSettings reports the kubelet API as it runs: its port, the
// certificate it serves (the self-signed pair where the agent keeps it),
// and the authentication and authorization it does.
func apiSettings(kc *kubeletv1beta1.KubeletConfiguration, api *agent.APIOptions, root string) error {
	_, port, err := net.SplitHostPort(api.Listen)
	if err != nil {
		return fmt.Errorf("configz: kubelet API address %q: %w", api.Listen, err)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return fmt.Errorf("configz: kubelet API port %q: %w", port, err)
	}
	kc.Port = int32(p)
	if kc.TLSMinVersion == "" {
		kc.TLSMinVersion = "VersionTLS12" // the server's least
	}
	if api.TLS.CertFile == "" {
		dir := api.TLS.CertDir
		if dir == "" {
			dir = filepath.Join(root, "pki")
		}
		kc.TLSCertFile, kc.TLSPrivateKeyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	}
	kc.Authentication.Webhook.Enabled = ptr.To(api.Authenticator != nil)
	kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	if api.Authorizer != nil {
		kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	return nil
}

// cgroupSettings reports the cgroups the agent keeps: with Cgroups.PerQOS,
// the driver, the cgroup root ("/" for none, as upstream reports it), the
// enforcement and the pods' pids limit (-1 for none); without,
// cgroupsPerQOS false and no driver (the runtime picks the cgroups),
// enforcement "none" and podPidsLimit -1.
func cgroupSettings(kc *kubeletv1beta1.KubeletConfiguration, opts *agent.Options) {
	kc.CgroupsPerQOS = ptr.To(opts.Cgroups.PerQOS)
	kc.EnforceNodeAllocatable = []string{"none"}
	if len(opts.Cgroups.EnforceNodeAllocatable) > 0 {
		kc.EnforceNodeAllocatable = opts.Cgroups.EnforceNodeAllocatable
	}
	kc.CgroupDriver, kc.CgroupRoot, kc.PodPidsLimit = "", "", ptr.To[int64](-1)
	period := opts.Cgroups.CPUCFSQuotaPeriod
	if period == 0 {
		period = containerconfig.DefaultCPUCFSQuotaPeriod
	}
	kc.CPUCFSQuotaPeriod = &metav1.Duration{Duration: period}
	if !opts.Cgroups.PerQOS {
		return
	}
	if opts.Cgroups.PodPidsLimit > 0 {
		kc.PodPidsLimit = ptr.To(opts.Cgroups.PodPidsLimit)
	}
	kc.CgroupDriver = opts.Cgroups.Driver
	kc.CgroupRoot = opts.Cgroups.Root
	if kc.CgroupRoot == "" {
		kc.CgroupRoot = "/"
	}
}
