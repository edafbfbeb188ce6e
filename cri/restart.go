package cri

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ShouldStartContainer is upstream's ShouldContainerBeRestarted on the
// runtime's view of c, a container of pod whose latest instance is latest
// (nil: none, never created or garbage-collected): whether the next sync
// starts c. Never for a pod being deleted; yes when there is no instance or
// it is created but never started or in an unknown state; no while it
// runs; and for an exited instance, podspec.RestartsAfterExit on its exit
// code (container restart rules). cri/podsync plans its starts with it, and
// status shows such a container waiting.
func ShouldStartContainer(pod *v1.Pod, c *v1.Container, latest *runtimeapi.ContainerStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	switch {
	case latest == nil:
		return true
	case latest.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING:
		return false
	case latest.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED:
		return podspec.RestartsAfterExit(pod, c, latest.GetExitCode())
	}
	return true
}
