package agent

import (
	"net"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// lowerDNS lower-cases a host name, as upstream does for the node name.
func lowerDNS(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// hostIP returns the machine's first global unicast address, or 127.0.0.1.
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

func sortPods(pods []v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// sortByCreation orders new pods as upstream admits them: oldest first.
func sortByCreation(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
}
