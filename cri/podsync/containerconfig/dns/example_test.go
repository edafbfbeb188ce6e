package dns_test

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
)

// A ClusterFirst pod on a node with cluster DNS, whose host sits behind
// systemd-resolved: the pod gets the cluster's server only, the cluster's
// search paths before the host's, and ndots:5. On a node without cluster
// DNS it falls back to the host's configuration, with upstream's events.
func Example() {
	host, err := dns.ParseResolvConf(strings.NewReader("nameserver 127.0.0.53\nsearch corp.example.\noptions edns0 trust-ad\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-1"},
		Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}

	r := dns.ForPod(dns.Input{Pod: pod, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", Host: &host})
	fmt.Println("nameservers:", r.Config.GetServers())
	fmt.Println("search:", r.Config.GetSearches())
	fmt.Println("options:", r.Config.GetOptions())

	r = dns.ForPod(dns.Input{Pod: pod, Host: &host})
	fmt.Println("without cluster DNS:", r.Config.GetServers(), r.Config.GetSearches(), r.Config.GetOptions())
	for _, e := range r.Events {
		fmt.Printf("event on node=%t: %s: %s\n", e.OnNode, e.Reason, e.Message)
	}
	// Output:
	// nameservers: [10.96.0.10]
	// search: [shop.svc.cluster.local svc.cluster.local cluster.local corp.example]
	// options: [ndots:5]
	// without cluster DNS: [127.0.0.53] [corp.example] [edns0 trust-ad]
	// event on node=true: MissingClusterDNS: kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.
	// event on node=false: MissingClusterDNS: pod: "web-0_shop(uid-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.
}
