package containerconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const localhostLines = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"

func TestHostsMount(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name    string
		spec    v1.PodSpec
		podName string
		mounts  []v1.VolumeMount
		ips     []string
		want    string // "" means no mount
	}{
		{name: "pod network: its IP and name", ips: []string{"10.88.0.5"},
			want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\tweb\n"},
		{name: "spec.hostname, every IP", spec: v1.PodSpec{Hostname: "h1"}, ips: []string{"10.88.0.5", "fd00::5"},
			want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\th1\nfd00::5\th1\n"},
		{name: "subdomain: the FQDN first", spec: v1.PodSpec{Hostname: "h1", Subdomain: "sub"}, ips: []string{"10.88.0.5"},
			want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\th1.sub.ns1.svc.cluster.local\th1\n"},
		{name: "hostnameOverride: the name alone, no FQDN", spec: v1.PodSpec{Hostname: "h1", Subdomain: "sub", HostnameOverride: ptr.To("override.example.host")},
			ips: []string{"10.88.0.5"}, want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\toverride.example.host\n"},
		{name: "host aliases", spec: v1.PodSpec{HostAliases: aliases}, ips: []string{"10.88.0.5"},
			want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"},
		{name: "a name cut to 63 characters without its trailing dash", podName: long + "c", ips: []string{"10.88.0.5"},
			want: "# Kubernetes-managed hosts file.\n" + localhostLines + "10.88.0.5\t" + strings.Repeat("a", 62) + "\n"},
		{name: "host network: the node's file and the aliases", spec: v1.PodSpec{HostNetwork: true, HostAliases: aliases},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node-hosts\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"},
		{name: "no IP yet on the pod network: none"},
		{name: "the container mounts /etc/hosts itself: none", ips: []string{"10.88.0.5"},
			mounts: []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nodeHosts := filepath.Join(dir, "node-hosts")
			require.NoError(t, os.WriteFile(nodeHosts, []byte("127.0.0.1 node-hosts\n"), 0o600))
			b, err := New(Options{PodsDir: filepath.Join(dir, "pods"), NodeHostsFile: nodeHosts, ClusterDomain: "cluster.local"})
			require.NoError(t, err)
			name := tc.podName
			if name == "" {
				name = "web"
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: "uid-1"}, Spec: tc.spec}
			c := &v1.Container{Name: "app", VolumeMounts: tc.mounts}
			m, err := b.hostsMount(pod, c, tc.ips)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, m)
				return
			}
			require.NotNil(t, m)
			assert.Equal(t, "/etc/hosts", m.ContainerPath)
			assert.False(t, m.Readonly)
			assert.Equal(t, filepath.Join(dir, "pods", "uid-1", "etc-hosts"), m.HostPath)
			content, err := os.ReadFile(m.HostPath)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(content))
			st, err := os.Stat(m.HostPath)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		})
	}
}

func TestHostsMountWithoutPodsDir(t *testing.T) {
	b, err := New(Options{})
	require.NoError(t, err)
	m, err := b.hostsMount(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}, &v1.Container{Name: "c"}, []string{"10.0.0.1"})
	require.NoError(t, err)
	assert.Nil(t, m)
}

// TestPodHostnameAndDomain holds upstream kubelet's cases of
// GeneratePodHostNameAndDomain (HostnameOverride on, as by default) and the
// truncation of an override.
func TestPodHostnameAndDomain(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		podName, hostname, subdomain  string
		override                      *string
		wantHostname, wantDomain, err string
	}{
		{name: "the pod's name", podName: "test-pod", wantHostname: "test-pod"},
		{name: "spec.hostname", podName: "test-pod", hostname: "custom-hostname", wantHostname: "custom-hostname"},
		{name: "a subdomain gives the domain", podName: "test-pod", subdomain: "my-subdomain",
			wantHostname: "test-pod", wantDomain: "my-subdomain.default.svc.cluster.local"},
		{name: "hostname and subdomain", podName: "test-pod", hostname: "custom-hostname", subdomain: "my-subdomain",
			wantHostname: "custom-hostname", wantDomain: "my-subdomain.default.svc.cluster.local"},
		{name: "hostnameOverride wins over hostname and subdomain, no domain", podName: "test-pod", hostname: "custom-hostname",
			subdomain: "my-subdomain", override: ptr.To("override-hostname"), wantHostname: "override-hostname"},
		{name: "hostnameOverride not a DNS subdomain", podName: "test-pod", hostname: "custom-hostname", subdomain: "my-subdomain",
			override: ptr.To("Invalid-Hostname-!"), err: `pod HostnameOverride "Invalid-Hostname-!" is not a valid DNS subdomain`},
		{name: "hostnameOverride with dots", podName: "test-pod", override: ptr.To("valid.hostname"), wantHostname: "valid.hostname"},
		{name: "empty hostnameOverride", podName: "test-pod", override: ptr.To(""), err: `pod HostnameOverride "" is not a valid DNS subdomain`},
		{name: "hostnameOverride of 64 characters cut to 63 without the trailing dot", podName: "test-pod",
			override: ptr.To(strings.Repeat("a", 62) + ".b"), wantHostname: strings.Repeat("a", 62)},
		{name: "a long pod name cut to 63", podName: strings.Repeat("a", 65), wantHostname: strings.Repeat("a", 63)},
		{name: "hostname not a DNS label", podName: "test-pod", hostname: "Invalid-Hostname-!",
			err: `pod Hostname "Invalid-Hostname-!" is not a valid DNS label`},
		{name: "subdomain not a DNS label", podName: "test-pod", subdomain: "invalid_subdomain",
			err: `pod Subdomain "invalid_subdomain" is not a valid DNS label`},
		{name: "hostname too long", podName: "test-pod", hostname: strings.Repeat("a", 64), err: "must be no more than 63 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.podName, Namespace: "default"},
				Spec: v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, HostnameOverride: tc.override}}
			hostname, domain, err := podHostnameAndDomain(pod, "cluster.local")
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantHostname, hostname)
			assert.Equal(t, tc.wantDomain, domain)
		})
	}
}
