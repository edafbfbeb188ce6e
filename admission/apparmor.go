package admission

import (
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ReasonAppArmor is the reason of a pod refused for the AppArmor profile it
// asks for, upstream's.
const ReasonAppArmor = "AppArmor"

// HostAppArmorEnabled tells whether this machine's kernel enforces AppArmor,
// as runc decides it: the securityfs directory exists and the module's
// "enabled" parameter reads Y. It is AppArmor.HostEnabled for a node that
// runs its containers here.
func HostAppArmorEnabled() bool {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false
	}
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// AppArmor is upstream's AppArmor admission handler. It refuses, with
// upstream's reason and message, a pod that asks for an AppArmor profile
// other than unconfined (in the pod's or a container's security context,
// or in the deprecated container.apparmor.security.beta.kubernetes.io
// annotations) on a host without AppArmor, and on any host a pod whose
// Localhost profile has no name. Every other profile reaches the runtime
// with the container (cri/podsync), which enforces it.
type AppArmor struct {
	// HostEnabled: the host enforces AppArmor (HostAppArmorEnabled for
	// this machine).
	HostEnabled bool
}

var _ Handler = AppArmor{}

// Admit refuses a pod whose AppArmor profile the node cannot enforce.
func (h AppArmor) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	if !appArmorRequested(pod) {
		return true, "", ""
	}
	if !h.HostEnabled {
		return false, ReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if msg := emptyLocalhostAppArmor(pod, &cs[i]); msg != "" {
				return false, ReasonAppArmor, msg
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if msg := emptyLocalhostAppArmor(pod, &c); msg != "" {
			return false, ReasonAppArmor, msg
		}
	}
	return true, "", ""
}

// emptyLocalhostAppArmor returns upstream's refusal of a container whose
// Localhost AppArmor profile has no name (or only blanks), else "".
func emptyLocalhostAppArmor(pod *v1.Pod, c *v1.Container) string {
	p := podspec.AppArmorProfile(pod, c)
	if p == nil || p.Type != v1.AppArmorProfileTypeLocalhost {
		return ""
	}
	if p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "" {
		return fmt.Sprintf("Cannot enforce AppArmor: invalid empty AppArmor profile name: %q", p)
	}
	return ""
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
