package status

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

const (
	runtimeapiReady       = runtimeapi.PodSandboxState_SANDBOX_READY
	runtimeapiPodNetwork  = runtimeapi.NamespaceMode_POD
	runtimeapiNodeNetwork = runtimeapi.NamespaceMode_NODE
)

// setIPs sets the pod IPs (at most one per family, the family of the node's
// primary IP first, as upstream) and the host IPs; a host-network pod takes
// the node's IPs as its own.
func setIPs(pod *v1.Pod, s *v1.PodStatus, rt *cri.PodStatus, hostIPs []string) {
	var ips []string
	if rt != nil {
		ips = rt.IPs
	}
	s.PodIPs = sortPodIPs(ips, hostIPs)
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if len(hostIPs) == 0 {
		return
	}
	s.HostIP = hostIPs[0]
	s.HostIPs = append(make([]v1.HostIP, 0, 2), v1.HostIP{IP: hostIPs[0]})
	if len(hostIPs) > 1 {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: hostIPs[1]})
	}
	if pod.Spec.HostNetwork {
		if s.PodIP == "" {
			s.PodIP = hostIPs[0]
			s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
		}
		if len(hostIPs) == 2 && len(s.PodIPs) == 1 && isIPv6(s.PodIPs[0].IP) != isIPv6(hostIPs[1]) {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: hostIPs[1]})
		}
	}
}

// sortPodIPs keeps the first IP of the node's primary family and the first
// of the other family, in that order. Without node IPs, IPv4 counts as the
// primary family.
func sortPodIPs(ips, hostIPs []string) []v1.PodIP {
	if len(ips) == 0 {
		return nil
	}
	wantV6 := len(hostIPs) > 0 && isIPv6(hostIPs[0])
	var first, second string
	for _, ip := range ips {
		if isIPv6(ip) == wantV6 {
			if first == "" {
				first = ip
			}
		} else if second == "" {
			second = ip
		}
	}
	out := make([]v1.PodIP, 0, 2)
	if first != "" {
		out = append(out, v1.PodIP{IP: first})
	}
	if second != "" {
		out = append(out, v1.PodIP{IP: second})
	}
	return out
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}
