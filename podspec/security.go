package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// AppArmorProfile returns the AppArmor profile a container of the pod runs
// under, as upstream picks it: the container's field, else the deprecated
// container.apparmor.security.beta.kubernetes.io/<name> annotation (static
// pods may carry only that), else the pod's field; nil when none says
// anything (the runtime's default then applies). An annotation whose value
// is none of runtime/default, unconfined and localhost/<name> is ignored,
// as upstream ignores it.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if csc := c.SecurityContext; csc != nil && csc.AppArmorProfile != nil {
		return csc.AppArmorProfile
	}
	if v, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case v == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case v == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.AppArmorProfile != nil {
		return psc.AppArmorProfile
	}
	return nil
}

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
