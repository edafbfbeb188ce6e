package kubeletconfig_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// The files kubeadm and kind write load, validate and convert; what they
// set arrives in the agent's options and in the cluster settings.
func TestGoldenFiles(t *testing.T) {
	for _, tc := range []struct {
		file     string
		endpoint string
		root     string
		gcHigh   int
	}{
		{file: "kubeadm.yaml", endpoint: kubeletconfig.DefaultRuntimeEndpoint, gcHigh: 85},
		{file: "kind.yaml", endpoint: "unix:///run/containerd/containerd.sock", root: "/kubelet", gcHigh: 100},
	} {
		t.Run(tc.file, func(t *testing.T) {
			kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: filepath.Join("testdata", tc.file)})
			require.NoError(t, err)
			require.NoError(t, kubeletconfig.Validate(kc))
			cfg, err := kubeletconfig.Convert(kc)
			require.NoError(t, err, "no refusal")
			o := cfg.Agent
			assert.Equal(t, []string{"10.96.0.10"}, o.Node.ClusterDNS)
			assert.Equal(t, "cluster.local", o.Node.ClusterDomain)
			assert.Equal(t, "/etc/resolv.conf", o.Node.ResolvConf)
			assert.Equal(t, int64(110), o.Node.MaxPods)
			assert.Zero(t, o.Node.MaxParallelImagePulls, "pulls serialised, upstream's default")
			assert.Equal(t, agent.PulledImagesOptions{VerificationPolicy: pullrecords.NeverVerifyPreloadedImages}, o.Node.PulledImages,
				"upstream's default since 1.35: images the node pulled need the credentials that pulled them")
			assert.Equal(t, "/etc/kubernetes/manifests", o.Sources.ManifestPath)
			assert.Equal(t, "/var/log/pods", o.Logs.Dir)
			assert.Equal(t, "systemd", o.Cgroups.Driver)
			assert.Equal(t, tc.root, o.Cgroups.Root)
			assert.True(t, o.Cgroups.PerQOS)
			assert.Equal(t, []string{"pods"}, o.Cgroups.EnforceNodeAllocatable)
			assert.Equal(t, int64(-1), o.Cgroups.PodPidsLimit, "upstream's default: no pod pids limit")
			assert.Equal(t, 100*time.Millisecond, o.Cgroups.CPUCFSQuotaPeriod, "upstream's default CFS period")
			assert.Equal(t, tc.gcHigh, o.ImageGC.HighThresholdPercent)
			require.NotNil(t, o.HTTP.API)
			assert.Equal(t, "0.0.0.0:10250", o.HTTP.API.Listen)
			assert.Equal(t, "/etc/kubernetes/pki/ca.crt", o.HTTP.API.TLS.ClientCAFile)
			assert.False(t, o.HTTP.API.Anonymous)
			assert.Empty(t, o.HTTP.Listen)
			require.NotNil(t, o.HTTP.Healthz, "kubeadm join waits for it")
			assert.Equal(t, "127.0.0.1:10248", o.HTTP.Healthz.Listen)
			assert.Equal(t, 40*time.Second, o.Cluster.LeaseDuration)
			assert.Equal(t, tc.endpoint, cfg.RuntimeEndpoint)
			assert.Equal(t, 2*time.Minute, cfg.RuntimeRequestTimeout)
			cl := cfg.Cluster
			assert.True(t, cl.WebhookAuthentication)
			assert.True(t, cl.WebhookAuthorization)
			assert.True(t, cl.RotateCertificates)
			assert.True(t, cl.RegisterNode)
			assert.Equal(t, float32(50), cl.KubeAPIQPS)
			assert.Equal(t, 100, cl.KubeAPIBurst)
			assert.Error(t, cl.Standalone(), "webhook authentication needs an API server")
		})
	}
}
