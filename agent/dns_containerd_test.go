//go:build containerd

package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

const dnsPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostname: web-0
  subdomain: shop
  containers:
  - {name: web, image: busybox:1.36, command: [sleep, "3600"]}
`

// TestContainerdPodDNS: on containerd, what a container reads in its
// /etc/resolv.conf is the cluster DNS server and search path for a
// ClusterFirst pod (the host's search path after them), the host's for a
// Default pod, and its /etc/hosts has its FQDN in the cluster's domain.
func TestContainerdPodDNS(t *testing.T) {
	c, image := ctrdtest.Client(t)
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	resolv := filepath.Join(dir, "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch corp.example.\noptions edns0\n"), 0o644))
	n := startNodeWith(t, agent.Options{Runtime: c, RootDir: filepath.Join(dir, "root"), Sources: agent.SourceOptions{ManifestPath: manifests},
		Node: agent.NodeOptions{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv}})

	n.write("cluster.yaml", ctrdManifest(dnsPod, image, "cluster"))
	n.write("default.yaml", strings.Replace(ctrdManifest(dnsPod, image, "host"), "spec:\n", "spec:\n  dnsPolicy: Default\n", 1))
	running := func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	}
	cluster := n.waitPod("cluster-web-node1", "running", running)
	host := n.waitPod("host-web-node1", "running", running)

	out, code := cat(t, c, cluster, "/etc/resolv.conf")
	require.Equal(t, int32(0), code, out)
	assert.Equal(t, []string{"search default.svc.cluster.local svc.cluster.local cluster.local corp.example", "nameserver 10.96.0.10", "options ndots:5"},
		resolvLines(out), out)
	out, code = cat(t, c, cluster, "/etc/hosts")
	require.Equal(t, int32(0), code, out)
	assert.Contains(t, out, cluster.Status.PodIP+"\tweb-0.shop.default.svc.cluster.local\tweb-0\n")

	out, code = cat(t, c, host, "/etc/resolv.conf")
	require.Equal(t, int32(0), code, out)
	assert.Equal(t, []string{"search corp.example", "nameserver 192.0.2.53", "options edns0"}, resolvLines(out), out)

	for _, f := range []string{"cluster.yaml", "default.yaml"} {
		require.NoError(t, os.Remove(filepath.Join(manifests, f)))
	}
	n.waitGone("cluster-web-node1")
	n.waitGone("host-web-node1")
}

// resolvLines are a resolv.conf's lines that say something.
func resolvLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
