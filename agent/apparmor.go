package agent

import (
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ReasonAppArmor is the reason of a pod refused for the AppArmor profile it
// asks for, upstream's.
const ReasonAppArmor = "AppArmor"

// hostAppArmor tells whether the kernel enforces AppArmor, as runc decides
// it: the securityfs directory exists and the module's "enabled" parameter
// reads Y. A variable, so that tests can choose.
var hostAppArmor = func() bool {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false
	}
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// admitAppArmor refuses a pod that asks for an AppArmor profile other than
// unconfined (in the pod's or a container's security context, or in the
// deprecated container.apparmor.security.beta.kubernetes.io annotations),
// with upstream's reason. On a host without AppArmor the message is
// upstream's. On a host with it the pod is refused as well: the agent does
// not pass profiles to the runtime yet, and a pod must never run less
// confined than it asked.
func admitAppArmor(pod *v1.Pod, hostEnabled bool) (ok bool, reason, message string) {
	if !appArmorRequested(pod) {
		return true, "", ""
	}
	if !hostEnabled {
		return false, ReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	return false, ReasonAppArmor, "Cannot enforce AppArmor: this node does not pass AppArmor profiles to its runtime"
}

// appArmorRequested reports whether any of the pod's containers asks for a
// profile other than unconfined.
func appArmorRequested(pod *v1.Pod) bool {
	confined := func(p *v1.AppArmorProfile) bool { return p != nil && p.Type != v1.AppArmorProfileTypeUnconfined }
	if sc := pod.Spec.SecurityContext; sc != nil && confined(sc.AppArmorProfile) {
		return true
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}
