package kubeletconfig_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// write puts content in dir/name and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// Decoding is strict: the type, unknown and duplicated fields and bad
// values are errors naming the file and the field.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"unknown field", head + "maxPod: 10\n", []string{"bad.yaml", `unknown field "maxPod"`}},
		{"nested unknown field", head + "authentication:\n  x509:\n    caFile: /ca\n", []string{"bad.yaml", `unknown field "authentication.x509.caFile"`}},
		{"case", head + "MaxPods: 10\n", []string{"bad.yaml", "MaxPods"}},
		{"duplicate", head + "maxPods: 10\nmaxPods: 11\n", []string{"bad.yaml", `"maxPods"`}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", []string{"bad.yaml", `kind "KubeProxyConfiguration"`}},
		{"wrong version", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", []string{"bad.yaml", `apiVersion "kubelet.config.k8s.io/v1"`}},
		{"no type", "maxPods: 10\n", []string{"bad.yaml", `apiVersion ""`}},
		{"empty", "", []string{"bad.yaml", "empty"}},
		{"wrong type", head + "maxPods: many\n", []string{"bad.yaml", "maxPods"}},
		{"json", `{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "podsPerCor": 1}`, []string{"bad.yaml", `unknown field "podsPerCor"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, t.TempDir(), "bad.yaml", tc.content)
			_, err := kubeletconfig.Load(kubeletconfig.Files{Config: p})
			require.ErrorIs(t, err, kubeletconfig.ErrDecode)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

// Relative paths are the file's directory's; no file means upstream's
// defaults alone.
func TestLoadPathsAndDefaults(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "kubelet/config.yaml", head+"staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\nresolvConf: /etc/resolv.conf\n")
	kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: p})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "kubelet", "manifests"), kc.StaticPodPath)
	assert.Equal(t, filepath.Join(dir, "kubelet", "pki", "kubelet.crt"), kc.TLSCertFile)
	assert.Equal(t, "/etc/resolv.conf", *kc.ResolverConfig)

	kc, err = kubeletconfig.Load(kubeletconfig.Files{})
	require.NoError(t, err)
	assert.Equal(t, int32(110), kc.MaxPods)
	assert.Equal(t, time.Minute, kc.SyncFrequency.Duration)
	assert.Equal(t, kubeletconfig.DefaultEvictionHard(), kc.EvictionHard)
	assert.True(t, *kc.SerializeImagePulls)
	assert.Equal(t, 5*time.Minute, kc.NodeStatusReportFrequency.Duration)
	require.NoError(t, kubeletconfig.Validate(kc))
}

// Defaults that depend on other fields follow them, as upstream's do.
func TestDefaultsDerived(t *testing.T) {
	kc := &kubeletv1beta1.KubeletConfiguration{NodeStatusUpdateFrequency: duration(20 * time.Second), MaxParallelImagePulls: ptrTo[int32](3)}
	kubeletconfig.SetDefaults(kc)
	assert.Equal(t, 20*time.Second, kc.NodeStatusReportFrequency.Duration)
	assert.False(t, *kc.SerializeImagePulls)
	// KubeletCrashLoopBackOffMax is beta and on by default since 1.35: the
	// crash loop's maximum defaults to 5m, unless the gate is off.
	kc = &kubeletv1beta1.KubeletConfiguration{PodPidsLimit: ptrTo[int64](-5)}
	kubeletconfig.SetDefaults(kc)
	assert.Equal(t, int64(-1), *kc.PodPidsLimit)
	assert.Equal(t, 5*time.Minute, kc.CrashLoopBackOff.MaxContainerRestartPeriod.Duration)
	assert.Equal(t, kubeletv1beta1.NeverVerifyPreloadedImages, kc.ImagePullCredentialsVerificationPolicy, "KubeletEnsureSecretPulledImages is on in 1.36")
	kc = &kubeletv1beta1.KubeletConfiguration{FeatureGates: map[string]bool{"KubeletEnsureSecretPulledImages": false}}
	kubeletconfig.SetDefaults(kc)
	assert.Empty(t, kc.ImagePullCredentialsVerificationPolicy, "no default with the gate off")
	kc = &kubeletv1beta1.KubeletConfiguration{FeatureGates: map[string]bool{"KubeletCrashLoopBackOffMax": false}}
	kubeletconfig.SetDefaults(kc)
	assert.Nil(t, kc.CrashLoopBackOff.MaxContainerRestartPeriod)
}

// Drop-ins ending in .conf merge over the file in lexical order: scalars
// and lists replaced, maps merged key by key, null removing a key; other
// files are skipped; a bad drop-in is named.
func TestDropIns(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "config.yaml", head+"port: 20250\nclusterDNS: [192.168.0.9, 192.168.0.8]\naddress: 192.168.0.1\n"+
		"featureGates:\n  EventedPLEG: true\n  MemoryQoS: true\nevictionHard:\n  memory.available: 200Mi\n")
	d := filepath.Join(dir, "conf.d")
	write(t, d, "10-a.conf", head+"address: 192.168.0.8\nclusterDNS: [192.168.0.2]\nfeatureGates:\n  MemoryQoS: false\n")
	write(t, d, "20-b.conf", head+"address: 192.168.0.9\nevictionHard:\n  nodefs.available: 5%\n  imagefs.available: null\nstaticPodPath: manifests\n")
	write(t, d, "30-skipped.yaml", head+"address: 10.0.0.1\n")
	write(t, d, "40-sub/50-c.conf", head+"port: 30250\n")
	kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: p, DropInDir: d})
	require.NoError(t, err)
	assert.Equal(t, "192.168.0.9", kc.Address)
	assert.Equal(t, int32(30250), kc.Port)
	assert.Equal(t, []string{"192.168.0.2"}, kc.ClusterDNS)
	assert.Equal(t, map[string]bool{"EventedPLEG": true, "MemoryQoS": false}, kc.FeatureGates)
	assert.Equal(t, map[string]string{"memory.available": "200Mi", "nodefs.available": "5%"}, kc.EvictionHard)
	assert.Equal(t, filepath.Join(d, "manifests"), kc.StaticPodPath, "relative to the drop-in")
	assert.Equal(t, int32(110), kc.MaxPods, "the defaults stay")

	write(t, d, "60-bad.conf", head+"adress: 10.0.0.1\n")
	_, err = kubeletconfig.Load(kubeletconfig.Files{Config: p, DropInDir: d})
	require.ErrorIs(t, err, kubeletconfig.ErrDecode)
	assert.ErrorContains(t, err, "60-bad.conf")
	assert.ErrorContains(t, err, `unknown field "adress"`)

	_, err = kubeletconfig.Load(kubeletconfig.Files{Config: p, DropInDir: filepath.Join(dir, "none")})
	assert.ErrorContains(t, err, "drop-in dir")
}
