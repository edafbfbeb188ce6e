package dns_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
)

const clusterNS = "203.0.113.1"

var missing = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`

func testPod(policy v1.DNSPolicy, hostNetwork bool, dc *v1.PodDNSConfig) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec:       v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: dc},
	}
}

func cfg(servers, searches, options []string) *runtimeapi.DNSConfig {
	return &runtimeapi.DNSConfig{Servers: servers, Searches: searches, Options: options}
}

// TestForPod holds upstream's cases of GetPodDNS and GetPodDNSType, and
// those of TestGetPodDNSCustom: each policy with and without the host's
// resolv.conf, cluster DNS and a dnsConfig.
func TestForPod(t *testing.T) {
	host := &dns.ResolvConf{Nameservers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}}
	three := "3"
	custom := &v1.PodDNSConfig{
		Nameservers: []string{"203.0.113.11"},
		Searches:    []string{"my.domain", "second.domain"},
		Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}},
	}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	for name, tc := range map[string]struct {
		in     dns.Input
		want   *runtimeapi.DNSConfig
		events []dns.Event
	}{
		"ClusterFirst": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg([]string{clusterNS}, append(clusterSearch, "corp.example", "example"), []string{"ndots:5"}),
		},
		"an empty policy is ClusterFirst": {
			in:   dns.Input{Pod: testPod("", false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots:5"}),
		},
		"an empty policy on the host network is Default": {
			in:   dns.Input{Pod: testPod("", true, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg(host.Nameservers, host.Searches, host.Options),
		},
		"an unknown policy on the host network is ClusterFirst": {
			in:   dns.Input{Pod: testPod("invalidPolicy", true, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots:5"}),
		},
		"an unknown policy is ClusterFirst": {
			in:   dns.Input{Pod: testPod("invalidPolicy", false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots:5"}),
		},
		"ClusterFirst, two cluster servers, no domain": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDNS: []string{clusterNS, "2001:db8::10"}, Host: host},
			want: cfg([]string{clusterNS, "2001:db8::10"}, []string{"corp.example", "example"}, []string{"ndots:5"}),
		},
		"ClusterFirst, the host already searches the cluster domain": {
			in: dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local",
				Host: &dns.ResolvConf{Searches: []string{"cluster.local", "corp.example"}}},
			want: cfg([]string{clusterNS}, append(clusterSearch, "corp.example"), []string{"ndots:5"}),
		},
		"ClusterFirst without a host resolv.conf": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots:5"}),
		},
		"ClusterFirst on the host network is Default": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, true, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg(host.Nameservers, host.Searches, host.Options),
		},
		"ClusterFirstWithHostNet on the host network": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirstWithHostNet, true, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg([]string{clusterNS}, append(clusterSearch, "corp.example", "example"), []string{"ndots:5"}),
		},
		"ClusterFirstWithHostNet on the pod's network": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirstWithHostNet, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots:5"}),
		},
		"ClusterFirst without cluster DNS falls back to Default": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDomain: "cluster.local", Host: host},
			want: cfg(host.Nameservers, host.Searches, host.Options),
			events: []dns.Event{{OnNode: true, Reason: dns.ReasonMissingClusterDNS, Message: missing},
				{Reason: dns.ReasonMissingClusterDNS, Message: `pod: "web_shop(uid-1)". ` + missing}},
		},
		"ClusterFirstWithHostNet without cluster DNS or resolv.conf": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirstWithHostNet, true, nil), HostIPs: []string{"192.0.2.10"}},
			want: cfg([]string{"127.0.0.1"}, []string{"."}, nil),
			events: []dns.Event{{OnNode: true, Reason: dns.ReasonMissingClusterDNS, Message: missing},
				{Reason: dns.ReasonMissingClusterDNS, Message: `pod: "web_shop(uid-1)". ` + missing}},
		},
		"Default": {
			in:   dns.Input{Pod: testPod(v1.DNSDefault, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg(host.Nameservers, host.Searches, host.Options),
		},
		"Default on the host network": {
			in:   dns.Input{Pod: testPod(v1.DNSDefault, true, nil), Host: host},
			want: cfg(host.Nameservers, host.Searches, host.Options),
		},
		"Default without a resolv.conf, no host IP": {
			in:   dns.Input{Pod: testPod(v1.DNSDefault, false, nil)},
			want: cfg([]string{"127.0.0.1"}, []string{"."}, nil),
		},
		"Default without a resolv.conf, dual-stack node": {
			in:   dns.Input{Pod: testPod(v1.DNSDefault, false, nil), HostIPs: []string{"2001:db8::10", "192.0.2.10", "::ffff:192.0.2.11"}},
			want: cfg([]string{"::1", "127.0.0.1", "127.0.0.1"}, []string{"."}, nil),
		},
		"None without dnsConfig": {
			in:   dns.Input{Pod: testPod(v1.DNSNone, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg(nil, nil, nil),
		},
		"None with dnsConfig": {
			in:   dns.Input{Pod: testPod(v1.DNSNone, false, custom), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg([]string{"203.0.113.11"}, []string{"my.domain", "second.domain"}, []string{"ndots:3", "debug"}),
		},
		"ClusterFirstWithHostNet with dnsConfig": {
			in: dns.Input{Pod: testPod(v1.DNSClusterFirstWithHostNet, true, custom), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: host},
			want: cfg([]string{clusterNS, "203.0.113.11"}, append(clusterSearch, "corp.example", "example", "my.domain", "second.domain"),
				[]string{"ndots:3", "debug"}),
		},
		"ClusterFirst with dnsConfig": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, custom), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS, "203.0.113.11"}, append(clusterSearch, "my.domain", "second.domain"), []string{"ndots:3", "debug"}),
		},
		"Default with dnsConfig": {
			in: dns.Input{Pod: testPod(v1.DNSDefault, false, custom), Host: host},
			want: cfg([]string{"192.0.2.53", "192.0.2.54", "203.0.113.11"}, []string{"corp.example", "example", "my.domain", "second.domain"},
				[]string{"ndots:3", "edns0", "debug"}),
		},
		"dnsConfig repeating what is there": {
			in: dns.Input{Pod: testPod(v1.DNSClusterFirst, false, &v1.PodDNSConfig{Nameservers: []string{clusterNS}, Searches: []string{"cluster.local"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: new(string)}}}), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local"},
			want: cfg([]string{clusterNS}, clusterSearch, []string{"ndots"}),
		},
		"too many nameservers": {
			in:   dns.Input{Pod: testPod(v1.DNSDefault, false, custom), Host: &dns.ResolvConf{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}}},
			want: cfg([]string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, []string{"my.domain", "second.domain"}, []string{"ndots:3", "debug"}),
			events: []dns.Event{{Reason: dns.ReasonDNSConfigForming,
				Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3"}},
		},
		"too many search paths": {
			in:   dns.Input{Pod: testPod(v1.DNSClusterFirst, false, nil), ClusterDNS: []string{clusterNS}, ClusterDomain: "cluster.local", Host: &dns.ResolvConf{Searches: domains(30)}},
			want: cfg([]string{clusterNS}, append(clusterSearch, domains(29)...), []string{"ndots:5"}),
			events: []dns.Event{{Reason: dns.ReasonDNSConfigForming,
				Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(append(clusterSearch, domains(29)...), " ")}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			hostBefore := fmt.Sprint(tc.in.Host)
			r := dns.ForPod(tc.in)
			assert.Equal(t, tc.want.GetServers(), r.Config.GetServers(), "servers")
			assert.Equal(t, tc.want.GetSearches(), r.Config.GetSearches(), "searches")
			assert.Equal(t, tc.want.GetOptions(), r.Config.GetOptions(), "options")
			assert.Equal(t, tc.events, r.Events)
			assert.Equal(t, hostBefore, fmt.Sprint(tc.in.Host), "the host's configuration is not changed")
		})
	}
}

// domains returns n search paths d0.example ... d<n-1>.example.
func domains(n int) []string {
	var d []string
	for i := range n {
		d = append(d, fmt.Sprintf("d%d.example", i))
	}
	return d
}

// line returns 8 search paths of 253 characters and a last one of n: a
// line of 2032+n characters.
func line(n int) []string {
	var l []string
	for i := range 8 {
		l = append(l, strings.Repeat(string(rune('a'+i)), 253))
	}
	return append(l, strings.Repeat("z", n))
}

// TestFitSearches holds upstream's cases of formDNSSearchFitsLimits.
func TestFitSearches(t *testing.T) {
	base := []string{"testNS.svc.TEST", "svc.TEST", "TEST"}
	long := strings.Repeat("B", 256)
	// 9 paths of 253 characters and their 8 spaces: 2285 characters.
	wide := make([]string, 9)
	for i := range wide {
		wide[i] = fmt.Sprintf("%d%s", i, strings.Repeat("x", 252))
	}
	for name, tc := range map[string]struct {
		in, want []string
		cut      bool
	}{
		"none":                 {in: nil, want: nil},
		"within":               {in: base, want: base},
		"more within":          {in: append(base, "AAA", "BBB"), want: append(base, "AAA", "BBB")},
		"a path too long":      {in: append(base, "AAA", long, "BBB"), want: append(base, "AAA", "BBB"), cut: true},
		"32 paths":             {in: domains(32), want: domains(32)},
		"33 paths":             {in: domains(33), want: domains(32), cut: true},
		"a line too long":      {in: wide, want: wide[:8], cut: true},
		"253 characters fits":  {in: wide[:1], want: wide[:1]},
		"2048 characters fits": {in: line(16), want: line(16)},
		"2049 characters":      {in: line(17), want: line(17)[:8], cut: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, cut := dns.FitSearches(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.cut, cut)
			assert.LessOrEqual(t, len(strings.Join(got, " ")), dns.MaxSearchListChars)
		})
	}
}

// TestFitNameservers holds upstream's cases of formDNSNameserversFitsLimits.
func TestFitNameservers(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want []string
		cut      bool
	}{
		"one":   {in: []string{"127.0.0.1"}, want: []string{"127.0.0.1"}},
		"three": {in: []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}, want: []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}},
		"four":  {in: []string{"127.0.0.1", "10.0.0.10", "8.8.8.8", "1.2.3.4"}, want: []string{"127.0.0.1", "10.0.0.10", "8.8.8.8"}, cut: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, cut := dns.FitNameservers(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.cut, cut)
		})
	}
}

// TestCheckLimits holds upstream's cases of CheckLimitsForResolvConf.
func TestCheckLimits(t *testing.T) {
	const path = "/etc/resolv.conf"
	for name, tc := range map[string]struct {
		searches []string
		domain   string
		want     string
	}{
		"none":                      {},
		"29 paths with a domain":    {searches: domains(29), domain: "cluster.local"},
		"30 paths with a domain":    {searches: domains(30), domain: "cluster.local", want: "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!"},
		"32 paths without a domain": {searches: domains(32)},
		"33 paths without a domain": {searches: domains(33), want: "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 32 domains!"},
		"a path of 253 characters":  {searches: []string{strings.Repeat("a", 253)}},
		"a path of 254 characters":  {searches: []string{"x", strings.Repeat("a", 254)}, want: `Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!`},
		"a line of 2048 characters": {searches: line(16)},
		"a line of 2049 characters": {searches: line(17), want: "Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, dns.CheckLimits(path, tc.searches, tc.domain))
		})
	}
}

func TestCheckResolvConf(t *testing.T) {
	dir := t.TempDir()
	assert.Contains(t, dns.CheckResolvConf(dir+"/missing", ""), "no such file or directory")
	for name, tc := range map[string]struct {
		data, want string
	}{
		"fine":        {data: "nameserver 10.0.0.1\nsearch a b\n"},
		"unparseable": {data: "nameserver\n", want: "nameserver list is empty"},
		"too many":    {data: "search " + strings.Join(domains(30), " "), want: "contains search line consisting of more than 29 domains!"},
	} {
		t.Run(name, func(t *testing.T) {
			path := dir + "/" + strings.ReplaceAll(name, " ", "-")
			writeFile(t, path, tc.data)
			got := dns.CheckResolvConf(path, "cluster.local")
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}
