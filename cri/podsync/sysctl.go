package podsync

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NormalizeSysctlName turns a sysctl name written with slashes
// (kernel/shm_rmid_forced) into its dotted form, as upstream: when the first
// separator is a slash, slashes and dots swap places
// (net/ipv4/conf/eth0.100/rp_filter is net.ipv4.conf.eth0/100.rp_filter).
func NormalizeSysctlName(name string) string {
	if i := strings.IndexAny(name, "./"); i < 0 || name[i] != '/' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}

// sandboxSysctls returns the pod's sysctls, by their dotted names, for the
// sandbox; nil when it sets none. Whether the node allows them is the
// admission's to say (agent), before the pod gets here.
func sandboxSysctls(pod *v1.Pod) map[string]string {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil
	}
	out := make(map[string]string, len(sc.Sysctls))
	for _, s := range sc.Sysctls {
		out[NormalizeSysctlName(s.Name)] = s.Value
	}
	return out
}
