// Package dns decides a pod's resolver configuration, the DNSConfig of its
// sandbox, as upstream's kubelet does (pkg/kubelet/network/dns): from the
// pod's dnsPolicy and dnsConfig, the node's cluster DNS servers and domain,
// and the host's resolv.conf.
//
// # Use
//
// ForPod is a pure function of an Input: it reads no file and records
// nothing. The caller reads the host's resolv.conf (ReadResolvConf, or
// ParseResolvConf of any reader) each time it builds a sandbox config, as
// upstream does, so that a change to the file reaches new pods, and records
// the Result's events:
//
//	host, err := dns.ReadResolvConf("/etc/resolv.conf")
//	if err != nil {
//		return err // upstream's kubelet fails the sandbox too
//	}
//	r := dns.ForPod(dns.Input{Pod: pod, ClusterDNS: []string{"10.96.0.10"},
//		ClusterDomain: "cluster.local", Host: &host, HostIPs: nodeIPs})
//	for _, e := range r.Events {
//		// e.OnNode: on the Node; else on the pod. Every one is a Warning.
//	}
//	sandboxConfig.DnsConfig = r.Config
//
// Package containerconfig does this for each sandbox config it builds
// (containerconfig.Options.ClusterDNS, ClusterDomain and ResolvConf), and
// records the events through its Options.Recorder.
//
// As a node starts, upstream's kubelet checks its resolv.conf once and warns
// on the Node (CheckLimitsForResolvConf) when it cannot be read or its
// search line goes beyond what a pod can get: CheckResolvConf gives that
// warning, CheckLimits the part that reads no file.
//
// # Names that match upstream
//
// The event reasons (DNSConfigForming, MissingClusterDNS,
// CheckLimitsForResolvConf) and messages, the limits (3 nameservers, 32
// search paths, 2048 characters of search line, 253 per path) and the
// reading of resolv.conf (nameservers accumulate, the last search line
// wins, options lines merge, trailing dots of search paths trimmed) are
// upstream's. One difference: upstream orders merged options at random,
// this package in the order their names first appear.
//
// # Threading
//
// Every function is safe for concurrent use and keeps nothing. There is no
// fake: Input is a plain value.
package dns
