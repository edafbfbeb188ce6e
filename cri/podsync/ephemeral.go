package podsync

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// targetNamespace puts an ephemeral container that names a target
// container (kubectl debug --target) in the target's process namespace,
// when the target runs, as upstream does.
func targetNamespace(pod *v1.Pod, name string, status *cri.PodStatus, config *runtimeapi.ContainerConfig) {
	var target string
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			target = pod.Spec.EphemeralContainers[i].TargetContainerName
		}
	}
	if target == "" {
		return
	}
	st := status.ContainerByName(target)
	if !running(st) {
		return
	}
	ns := config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil {
		return
	}
	ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, st.GetId()
}
