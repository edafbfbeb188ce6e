package containerconfig

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

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
		out[podspec.NormalizeSysctlName(s.Name)] = s.Value
	}
	return out
}
