package agent

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
)

// ResolvConfNone as Node.ResolvConf gives the pods no host resolver
// configuration, as upstream's --resolv-conf="".
const ResolvConfNone = "none"

// resolvConf is the file Node.ResolvConf names: /etc/resolv.conf when
// empty, "" (none) for ResolvConfNone.
func (o NodeOptions) resolvConf() string {
	switch o.ResolvConf {
	case "":
		return dns.DefaultResolvConf
	case ResolvConfNone:
		return ""
	}
	return o.ResolvConf
}

// checkDNS refuses cluster DNS addresses that are not IP addresses and a
// cluster domain with white space.
func (o NodeOptions) checkDNS() error {
	for _, s := range o.ClusterDNS {
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Errorf("agent: Node.ClusterDNS: %q is not an IP address: %w", s, ErrInvalidOptions)
		}
	}
	if strings.ContainsFunc(o.ClusterDomain, unicode.IsSpace) {
		return fmt.Errorf("agent: Node.ClusterDomain %q holds white space: %w", o.ClusterDomain, ErrInvalidOptions)
	}
	return nil
}

// checkResolvConf warns on the node, as upstream's kubelet does once as
// its sync loop starts, when the host's resolv.conf cannot be read or its
// search line is beyond what pods can get.
func (b *blocks) checkResolvConf() {
	path := b.opts.Node.resolvConf()
	if msg := dns.CheckResolvConf(path, b.opts.Node.ClusterDomain); msg != "" {
		b.events.Eventf(&v1.ObjectReference{Kind: "Node", Name: b.opts.NodeName}, v1.EventTypeWarning, dns.ReasonCheckLimitsForResolvConf, "%s", msg)
	}
}
