package dns_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
)

// BenchmarkSandboxDNS is the DNS part of every sandbox config: the host's
// resolv.conf parsed (read for each sandbox, as upstream) and a
// ClusterFirst pod's configuration formed.
func BenchmarkSandboxDNS(b *testing.B) {
	const resolv = "nameserver 127.0.0.53\nsearch corp.example. lab.corp.example\noptions edns0 trust-ad\n"
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-1"},
		Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst, Hostname: "web-0", Subdomain: "web"}}
	b.ReportAllocs()
	for b.Loop() {
		host, err := dns.ParseResolvConf(strings.NewReader(resolv))
		if err != nil {
			b.Fatal(err)
		}
		r := dns.ForPod(dns.Input{Pod: pod, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", Host: &host})
		if len(r.Config.GetServers()) != 1 {
			b.Fatalf("servers %v", r.Config.GetServers())
		}
	}
}
