package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// kubeadmConfig is /var/lib/kubelet/config.yaml as kubeadm writes it, but
// for its paths, relative here (to the file's directory).
const kubeadmConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`

// kubeconfigFile writes a kubeconfig of an API server that is never
// dialled: the options are built, nothing runs.
func kubeconfigFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	return p
}

// kubeadm's config.yaml, drop-ins over it and flags over both: the file
// alone asks to rotate a client certificate the kubeconfig (a token) does
// not have, refused by name; a drop-in turns it off; the flags given win over
// both; the agent's options and /configz show the merged result.
func TestConfigFileDropInAndFlags(t *testing.T) {
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "manifests"), 0o750))
	config := filepath.Join(etc, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(kubeadmConfig), 0o600))
	kubeconfig := kubeconfigFile(t, dir)
	base := []string{"--config", config, "--kubeconfig", kubeconfig, "--root-dir", filepath.Join(dir, "root"), "--local-state", "",
		"--cgroups-per-qos=false", "--enforce-node-allocatable", "none"}

	c, err := parseFlags(base, io.Discard)
	require.NoError(t, err, "rotateCertificates is supported")
	require.NotNil(t, c.cfg.Agent.HTTP.Healthz)
	assert.Equal(t, "127.0.0.1:10248", c.cfg.Agent.HTTP.Healthz.Listen, "the file's healthz port")
	_, _, err = options(c, io.Discard, slog.New(slog.DiscardHandler))
	assert.EqualError(t, err, "rotateCertificates: the client certificate of --kubeconfig "+kubeconfig+" must be "+
		filepath.Join(dir, "root", "pki", "kubelet-client-current.pem")+", as --bootstrap-kubeconfig writes it", "a token is not a certificate to rotate")

	dropIns := filepath.Join(etc, "kubelet.conf.d")
	require.NoError(t, os.MkdirAll(dropIns, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dropIns, "10-kubeletkit.conf"), []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [10.96.0.20]
readOnlyPort: 10255
port: 11250
podPidsLimit: 2048
evictionHard:
  memory.available: 200Mi
`), 0o600))
	withDropIns := append(base, "--config-dir", dropIns)
	require.NoError(t, os.WriteFile(filepath.Join(dropIns, "20-no-rotation.conf"), []byte(
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nrotateCertificates: false\n"), 0o600))
	c, err = parseFlags(append(withDropIns, "--port", "12250", "--hostname-override", "Edge-7", "--node-labels", "zone=z1",
		"--register-with-taints", "edge=true:NoSchedule", "--provider-id", "kind://docker/kind/edge-7", "--container-runtime-endpoint", "unix:///run/x.sock", "--max-pods", "250",
		"--healthz-port", "10249", "--pod-max-pids", "4096"), io.Discard)
	require.NoError(t, err)
	opts, joined, err := options(c, io.Discard, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, joined)

	assert.Equal(t, "edge-7", opts.NodeName)
	assert.Equal(t, filepath.Join(etc, "manifests"), opts.Sources.ManifestPath, "relative to the file")
	assert.Equal(t, "/var/log/pods", opts.Logs.Dir, "upstream's default with a file")
	assert.Equal(t, "0.0.0.0:10255", opts.HTTP.Listen, "the drop-in's")
	require.NotNil(t, opts.HTTP.Healthz)
	assert.Equal(t, "127.0.0.1:10249", opts.HTTP.Healthz.Listen, "the flag over the file")
	require.NotNil(t, opts.HTTP.API)
	assert.Equal(t, "0.0.0.0:12250", opts.HTTP.API.Listen, "the flag over the drop-in over the file")
	assert.Equal(t, filepath.Join(etc, "pki", "ca.crt"), opts.HTTP.API.TLS.ClientCAFile)
	assert.NotNil(t, opts.HTTP.API.Authenticator, "webhook authentication, joined")
	assert.NotNil(t, opts.HTTP.API.Authorizer, "webhook authorization, joined")
	assert.False(t, opts.Cgroups.PerQOS, "the flag over the file's default")
	assert.Equal(t, "systemd", opts.Cgroups.Driver)
	assert.Equal(t, map[string]string{"zone": "z1"}, opts.Node.Labels)
	assert.Equal(t, 40*time.Second, opts.Cluster.LeaseDuration)
	require.NotEmpty(t, opts.Eviction.Thresholds)
	assert.Equal(t, "unix:///run/x.sock", c.kc.ContainerRuntimeEndpoint)
	assert.Equal(t, []string{"10.96.0.20"}, opts.Node.ClusterDNS, "the drop-in's list replaces the file's")
	assert.Equal(t, "cluster.local", opts.Node.ClusterDomain)
	assert.Equal(t, int64(250), opts.Node.MaxPods)
	assert.Equal(t, int64(4096), opts.Cgroups.PodPidsLimit, "the flag over the drop-in")
	assert.Zero(t, opts.Node.MaxParallelImagePulls, "serialised, upstream's default")
	assert.Equal(t, agent.PulledImagesOptions{VerificationPolicy: pullrecords.NeverVerifyPreloadedImages}, opts.Node.PulledImages, "upstream's default")

	v, err := opts.HTTP.API.Configz.KubeletConfig()
	require.NoError(t, err)
	body, err := json.Marshal(v)
	require.NoError(t, err)
	var got kubeletv1beta1.KubeletConfiguration
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))
	assert.Equal(t, int32(12250), got.Port)
	assert.Equal(t, int32(10255), got.ReadOnlyPort)
	assert.Equal(t, map[string]string{"memory.available": "200Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"},
		got.EvictionHard, "the drop-in's key merged into the defaults")
	assert.Equal(t, []string{"10.96.0.20"}, got.ClusterDNS)
	assert.Equal(t, int32(250), got.MaxPods)
	assert.Equal(t, ptr.To[int64](-1), got.PodPidsLimit, "no pod cgroups (--cgroups-per-qos=false) to limit")
	assert.False(t, got.RotateCertificates)
	assert.Equal(t, "kind://docker/kind/edge-7", got.ProviderID)
	assert.Equal(t, []v1.Taint{{Key: "edge", Value: "true", Effect: v1.TaintEffectNoSchedule}}, got.RegisterWithTaints)
	assert.Equal(t, ptr.To(true), got.Authentication.Webhook.Enabled)
	assert.Equal(t, kubeletv1beta1.KubeletAuthorizationModeWebhook, got.Authorization.Mode)
	assert.Equal(t, "unix:///run/x.sock", got.ContainerRuntimeEndpoint)
	assert.Equal(t, ptr.To(true), got.RegisterNode)
}

// Errors of the files and of the flags that go with them name the file
// or the field.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPod: 5\n"), 0o600))
	standalone := filepath.Join(dir, "standalone.yaml")
	require.NoError(t, os.WriteFile(standalone, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: m\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--config", bad}, []string{bad, `unknown field "maxPod"`}},
		{[]string{"--config", filepath.Join(dir, "none.yaml")}, []string{"none.yaml", "no such file"}},
		{[]string{"--config", standalone}, []string{`authentication.webhook.enabled true: not supported by this node (needs an API server)`,
			`authorization.mode "Webhook": not supported by this node (needs an API server)`}},
		{[]string{"--max-pods", "-1"}, []string{"invalid configuration: maxPods (--max-pods) -1 must not be a negative number"}},
		{[]string{"--register-with-taints", "edge"}, []string{`"edge" is not key=value:Effect or key:Effect`}},
		{[]string{"--register-with-taints", "edge:NoSchedule"}, []string{"--register-with-taints needs --kubeconfig"}},
		{[]string{"--provider-id", "p://1"}, []string{"--provider-id needs --kubeconfig"}},
		{[]string{"--node-name", "a", "--hostname-override", "b"}, []string{"--node-name=a and --hostname-override=b differ"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(t.Context(), append(tc.args, "--root-dir", filepath.Join(dir, "root")), io.Discard, io.Discard)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

// TestHelp: -h and --help print the usage and return flag.ErrHelp, which
// main turns into exit status 0, as upstream kubelet's --help.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var stderr bytes.Buffer
		err := run(t.Context(), []string{arg}, io.Discard, &stderr)
		require.ErrorIs(t, err, flag.ErrHelp, arg)
		assert.Contains(t, stderr.String(), "-config", arg)
		assert.Contains(t, stderr.String(), "-root-dir", arg)
	}
}
