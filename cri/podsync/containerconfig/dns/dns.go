package dns

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's limits on a pod's resolver configuration.
const (
	// MaxNameservers is how many nameservers a pod gets; more are dropped.
	MaxNameservers = 3
	// MaxSearchPaths is how many search paths a pod gets; more are dropped.
	MaxSearchPaths = 32
	// MaxSearchListChars is the longest search line (the paths joined by
	// spaces) a pod gets; the last paths are dropped until it fits.
	MaxSearchListChars = 2048
	// MaxSearchPathChars is the longest search path a pod gets (a DNS-1123
	// subdomain's 253): a longer one is dropped, as some resolvers (glibc
	// 2.28) abort on it.
	MaxSearchPathChars = 253
)

// Event reasons, upstream's.
const (
	// ReasonDNSConfigForming: a pod's nameservers or search paths were cut
	// to the limits.
	ReasonDNSConfigForming = "DNSConfigForming"
	// ReasonMissingClusterDNS: a ClusterFirst pod on a node without cluster
	// DNS got the Default policy's configuration instead.
	ReasonMissingClusterDNS = "MissingClusterDNS"
	// ReasonCheckLimitsForResolvConf: the host's resolv.conf cannot be
	// read, or its search line goes beyond what pods can get.
	ReasonCheckLimitsForResolvConf = "CheckLimitsForResolvConf"
)

// clusterOptions are the options of a pod that uses cluster DNS.
var clusterOptions = []string{"ndots:5"}

// Input is what decides a pod's resolver configuration.
type Input struct {
	// Pod is the pod; its namespace, dnsPolicy, hostNetwork and dnsConfig
	// are read.
	Pod *v1.Pod
	// ClusterDNS are the addresses of the cluster's DNS servers (upstream's
	// clusterDNS); empty means the node has none.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (upstream's clusterDomain,
	// cluster.local in most clusters); empty means none, and then no
	// cluster search paths.
	ClusterDomain string
	// Host is the host's resolver configuration (the file upstream's
	// --resolv-conf names, parsed); nil means the node has none
	// (--resolv-conf="").
	Host *ResolvConf
	// HostIPs are the node's addresses; without Host, a pod of the Default
	// policy gets the loopback address of each one's family as its
	// nameservers (127.0.0.1 when there are none).
	HostIPs []string
}

// Event is an event the decision asks to record, on the pod or, when
// OnNode, on the node; every one is a Warning.
type Event struct {
	OnNode  bool
	Reason  string
	Message string
}

// Result is a pod's resolver configuration and the events to record.
type Result struct {
	// Config is the sandbox's DNS config. It is never nil; when it has no
	// server, search or option the runtime gives the sandbox the host's
	// resolv.conf (containerd copies its own host's).
	Config *runtimeapi.DNSConfig
	Events []Event
}

// ForPod decides a pod's resolver configuration as upstream's kubelet does.
//
// By dnsPolicy:
//   - ClusterFirst (the default) on the pod's own network, and
//     ClusterFirstWithHostNet: the cluster DNS servers only; the search
//     paths <namespace>.svc.<domain>, svc.<domain> and <domain> followed by
//     the host's (once each; the host's alone without ClusterDomain);
//     options ndots:5. On a node without ClusterDNS, the pod gets what
//     Default gives, with a MissingClusterDNS event on the node and one on
//     the pod.
//   - ClusterFirst on the host's network, and Default: the host's
//     nameservers, search paths and options. Without Host: the loopback
//     address of each HostIPs family (127.0.0.1 when none) and search ".",
//     which keeps the runtime from giving the pod its host's file.
//   - None: nothing but the pod's dnsConfig.
//
// An empty policy is ClusterFirst, the API server's default; an unknown
// one, which the API server refuses, is taken as ClusterFirst on any
// network, as upstream's. Then the pod's dnsConfig is added: its nameservers and
// searches after the others, once each, and its options over those of the
// same name. Last, the configuration is cut to the limits: MaxNameservers
// nameservers; MaxSearchPaths search paths, none longer than
// MaxSearchPathChars, the last ones dropped while the line is longer than
// MaxSearchListChars; with a DNSConfigForming event for each list cut.
//
// Upstream's kubelet orders the options it merges at random; ForPod keeps
// the order in which names first appear.
func ForPod(in Input) Result {
	var r Result
	pod := in.Pod
	cfg := &runtimeapi.DNSConfig{}
	if in.Host != nil {
		cfg.Servers = slices.Clone(in.Host.Nameservers)
		cfg.Searches = slices.Clone(in.Host.Searches)
		cfg.Options = slices.Clone(in.Host.Options)
	}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = v1.DNSClusterFirst
	}
	if policy == v1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = v1.DNSDefault
	}
	switch policy {
	case v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case v1.DNSDefault:
		r.hostDefaults(cfg, in)
	default: // ClusterFirst, ClusterFirstWithHostNet, or unknown
		if len(in.ClusterDNS) == 0 {
			msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
			r.Events = append(r.Events,
				Event{OnNode: true, Reason: ReasonMissingClusterDNS, Message: msg},
				Event{Reason: ReasonMissingClusterDNS, Message: fmt.Sprintf("pod: %q. %s", podDesc(pod), msg)})
			r.hostDefaults(cfg, in)
			break
		}
		cfg.Servers = slices.Clone(in.ClusterDNS)
		if d := in.ClusterDomain; d != "" {
			cfg.Searches = unique(append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, cfg.Searches...))
		}
		cfg.Options = slices.Clone(clusterOptions)
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = unique(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = unique(append(cfg.Searches, dc.Searches...))
		opts := make([]string, 0, len(dc.Options))
		for _, o := range dc.Options {
			if o.Value != nil && *o.Value != "" {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		cfg.Options = mergeOptions(cfg.Options, opts)
	}
	var cut bool
	if cfg.Servers, cut = FitNameservers(cfg.Servers); cut {
		r.Events = append(r.Events, Event{Reason: ReasonDNSConfigForming, Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	if cfg.Searches, cut = FitSearches(cfg.Searches); cut {
		r.Events = append(r.Events, Event{Reason: ReasonDNSConfigForming, Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	r.Config = cfg
	return r
}

// hostDefaults leaves the host's configuration in cfg or, on a node
// without one, points the pod at its own loopback address.
func (r *Result) hostDefaults(cfg *runtimeapi.DNSConfig, in Input) {
	if in.Host != nil {
		return
	}
	for _, s := range in.HostIPs {
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap().Is6() {
			cfg.Servers = append(cfg.Servers, "::1")
		} else {
			cfg.Servers = append(cfg.Servers, "127.0.0.1")
		}
	}
	if len(cfg.Servers) == 0 {
		cfg.Servers = []string{"127.0.0.1"}
	}
	cfg.Searches = []string{"."}
}

// FitNameservers returns the first MaxNameservers of servers, and whether
// any was dropped.
func FitNameservers(servers []string) ([]string, bool) {
	if len(servers) > MaxNameservers {
		return servers[:MaxNameservers], true
	}
	return servers, false
}

// FitSearches returns searches cut to upstream's limits, and whether any
// was dropped: the first MaxSearchPaths, less those longer than
// MaxSearchPathChars, less the last ones while the line (the paths joined
// by spaces) is longer than MaxSearchListChars. searches is not changed.
func FitSearches(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > MaxSearchPaths {
		searches, cut = searches[:MaxSearchPaths], true
	}
	out := make([]string, 0, len(searches))
	for _, s := range searches {
		if len(s) > MaxSearchPathChars {
			cut = true
			continue
		}
		out = append(out, s)
	}
	line := len(strings.Join(out, " "))
	for line > MaxSearchListChars {
		line -= len(out[len(out)-1]) + 1
		out = out[:len(out)-1]
		cut = true
	}
	if !cut {
		return searches, false
	}
	return out, true
}

// CheckLimits returns the warning upstream's kubelet records on its node
// when the search line of its resolv.conf (at path, searches as parsed) has
// more paths than pods can get besides the three cluster ones (with a
// ClusterDomain), a path longer than MaxSearchPathChars, or more than
// MaxSearchListChars characters; "" when it fits.
func CheckLimits(path string, searches []string, clusterDomain string) string {
	limit := MaxSearchPaths
	if clusterDomain != "" {
		limit -= 3
	}
	if len(searches) > limit {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line consisting of more than %d domains!", path, limit)
	}
	for _, s := range searches {
		if len(s) > MaxSearchPathChars {
			return fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", path, MaxSearchPathChars)
		}
	}
	if len(strings.Join(searches, " ")) > MaxSearchListChars {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line which length is more than allowed %d chars!", path, MaxSearchListChars)
	}
	return ""
}

// CheckResolvConf reads the host's resolv.conf at path and returns what
// upstream's kubelet records on its node as it starts (a
// CheckLimitsForResolvConf warning): the error reading or parsing it, else
// CheckLimits's warning; "" when it is fine.
func CheckResolvConf(path, clusterDomain string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	conf, err := ParseResolvConf(f)
	if err != nil {
		return err.Error()
	}
	return CheckLimits(path, conf.Searches, clusterDomain)
}

// unique returns s without its repeated elements, the first of each kept.
func unique(s []string) []string {
	out := s[:0:0]
	seen := make(map[string]bool, len(s))
	for _, e := range s {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// podDesc formats a pod as upstream does in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
