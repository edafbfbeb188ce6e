package agenttest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// sandboxDNS is the DNS config of the last sandbox the node ran for a pod.
func sandboxDNS(t *testing.T, n *agenttest.Node, name string) *runtimeapi.DNSConfig {
	t.Helper()
	var cfg *runtimeapi.DNSConfig
	for _, c := range n.Runtime().CallsOf(fake.RunPodSandbox) {
		if sb := c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig(); sb.GetMetadata().GetName() == name {
			cfg = sb.GetDnsConfig()
		}
	}
	require.NotNil(t, cfg, "no sandbox of %s", name)
	return cfg
}

// eventLines are the node's events of a reason, as strings.
func eventLines(n *agenttest.Node, reason string) []string {
	var out []string
	for _, e := range n.Events() {
		if e.Reason == reason {
			out = append(out, e.String())
		}
	}
	return out
}

func writeResolvConf(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	return path
}

// TestPodDNS: the sandbox of a pod of each dnsPolicy, on a node with
// cluster DNS and a host resolv.conf (a host behind systemd-resolved).
func TestPodDNS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resolv := writeResolvConf(t, "nameserver 127.0.0.53\nsearch corp.example.\noptions edns0 trust-ad\n")
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{
			ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv}}})
		two := "2"
		clusterSearch := []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
		for _, tc := range []struct {
			name        string
			policy      v1.DNSPolicy
			hostNetwork bool
			dnsConfig   *v1.PodDNSConfig
			want        *runtimeapi.DNSConfig
		}{
			{name: "cluster-first", policy: v1.DNSClusterFirst,
				want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
			{name: "cluster-first-host", policy: v1.DNSClusterFirst, hostNetwork: true,
				want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "trust-ad"}}},
			{name: "with-host-net", policy: v1.DNSClusterFirstWithHostNet, hostNetwork: true,
				want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
			{name: "default", policy: v1.DNSDefault,
				want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "trust-ad"}}},
			{name: "none", policy: v1.DNSNone, dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.1"}, Searches: []string{"a.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}}},
				want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2"}}},
			{name: "cluster-first-custom", policy: v1.DNSClusterFirst, dnsConfig: &v1.PodDNSConfig{Searches: []string{"b.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "single-request"}}},
				want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: append(clusterSearch, "b.example"), Options: []string{"ndots:2", "single-request"}}},
		} {
			p := pod(tc.name, v1.Container{Name: "app", Image: "busybox:1.36"})
			p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.dnsConfig
			n.AddPod(p)
			assert.Equal(t, tc.want, sandboxDNS(t, n, tc.name), tc.name)
		}
		assert.Empty(t, eventLines(n, "MissingClusterDNS"))
		assert.Empty(t, eventLines(n, "DNSConfigForming"))
		assert.Empty(t, eventLines(n, "CheckLimitsForResolvConf"))
	})
}

// TestPodDNSWithoutClusterDNS: a ClusterFirst pod on a node without
// cluster DNS or resolv.conf gets upstream's Default fallback, loopback,
// with its events on the node and the pod.
func TestPodDNSWithoutClusterDNS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{ClusterDNS: []string{}}}})
		n.AddPod(pod("web", v1.Container{Name: "app", Image: "busybox:1.36"}))
		assert.Equal(t, &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}, sandboxDNS(t, n, "web"))
		msg := `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
		uid := n.Pod("default", "web").UID
		assert.Equal(t, []string{
			"Node node1 Warning MissingClusterDNS " + msg,
			fmt.Sprintf(`Pod default/web Warning MissingClusterDNS pod: "web_default(%s)". %s`, uid, msg),
		}, eventLines(n, "MissingClusterDNS"))
	})
}

// TestResolvConfLimits: a host resolv.conf whose search line is beyond
// what pods can get is warned about on the node as the agent starts, and a
// ClusterFirst pod gets its search paths cut, with upstream's event.
func TestResolvConfLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var domains []string
		for i := range 31 {
			domains = append(domains, fmt.Sprintf("d%d.example", i))
		}
		resolv := writeResolvConf(t, "nameserver 192.0.2.53\nsearch "+strings.Join(domains, " ")+"\n")
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{ResolvConf: resolv}}})
		assert.Equal(t, []string{fmt.Sprintf("Node node1 Warning CheckLimitsForResolvConf Resolv.conf file '%s' contains search line consisting of more than 29 domains!", resolv)},
			eventLines(n, "CheckLimitsForResolvConf"))

		n.AddPod(pod("web", v1.Container{Name: "app", Image: "busybox:1.36"}))
		want := append([]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, domains[:29]...)
		assert.Equal(t, want, sandboxDNS(t, n, "web").GetSearches())
		assert.Equal(t, []string{"Pod default/web Warning DNSConfigForming Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " +
			strings.Join(want, " ")}, eventLines(n, "DNSConfigForming"))
	})
}

// TestResolvConfMissing: a resolv.conf that cannot be read is warned about
// as the agent starts and fails each sandbox, as upstream's.
func TestResolvConfMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		resolv := filepath.Join(t.TempDir(), "missing")
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{ResolvConf: resolv}}})
		assert.Equal(t, []string{fmt.Sprintf("Node node1 Warning CheckLimitsForResolvConf open %s: no such file or directory", resolv)},
			eventLines(n, "CheckLimitsForResolvConf"))
		n.AddPod(pod("web", v1.Container{Name: "app", Image: "busybox:1.36"}))
		assert.Empty(t, n.Runtime().CallsOf(fake.RunPodSandbox))
		failed := eventLines(n, "FailedCreatePodSandBox")
		require.NotEmpty(t, failed)
		assert.Contains(t, failed[0], "no such file or directory")
	})
}

// TestSubdomainFQDN: a pod with a hostname and a subdomain has its FQDN in
// the cluster's domain in its hosts file.
func TestSubdomainFQDN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})
		p := pod("web-0", v1.Container{Name: "app", Image: "busybox:1.36"})
		p.Spec.Hostname, p.Spec.Subdomain = "web-0", "web"
		p = n.AddPod(p)
		require.Equal(t, v1.PodRunning, p.Status.Phase)
		hosts, err := os.ReadFile(filepath.Join(root, "pods", string(p.UID), "etc-hosts"))
		require.NoError(t, err)
		assert.Contains(t, string(hosts), p.Status.PodIP+"\tweb-0.web.default.svc.cluster.local\tweb-0\n")
	})
}

// TestHostnameOverride: spec.hostnameOverride (HostnameOverride, on by
// default) is the sandbox's hostname and the only name of the pod's IP in its
// hosts file, hostname and subdomain ignored, as upstream's e2e "Override
// hostname of Pod" expects (`hostname` and `hostname -f` both print it).
func TestHostnameOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})
		override := "override.example.host"
		p := pod("web-0", v1.Container{Name: "app", Image: "busybox:1.36"})
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostnameOverride = "web-0", "web", &override
		p = n.AddPod(p)
		require.Equal(t, v1.PodRunning, p.Status.Phase)
		var hostname string
		for _, c := range n.Runtime().CallsOf(fake.RunPodSandbox) {
			hostname = c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetHostname()
		}
		assert.Equal(t, override, hostname)
		hosts, err := os.ReadFile(filepath.Join(root, "pods", string(p.UID), "etc-hosts"))
		require.NoError(t, err)
		assert.Contains(t, string(hosts), p.Status.PodIP+"\t"+override+"\n")
		assert.NotContains(t, string(hosts), "svc.cluster.local")
	})
}
