package status

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// A pod restarts all its containers in place when one of them exits with a
// code that a restartPolicyRules entry with action RestartAllContainers
// matches (upstream's RestartAllContainersOnContainerExits, beta and on by
// default since 1.36). Its status says so while the kubelet removes its
// containers, in upstream's words.
const (
	// ReasonRestartAllContainersStarted is the reason of the
	// AllContainersRestarting condition while it is True.
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"
	// MessageRestartAllContainersStarted is its message.
	MessageRestartAllContainersStarted = "container exited with restart policy rule"
	// ReasonRestartingAllContainers is the waiting reason, and the reason
	// of the last termination (exit code 137), of a container removed by
	// such a restart; a stopped container with that termination is
	// restarting, whatever its restart policy.
	ReasonRestartingAllContainers = "RestartingAllContainers"
	// msgRestartingAllContainers is their message.
	msgRestartingAllContainers = "The container is removed because RestartAllContainers in place"
)

// AllContainersRestarting reports whether st says the pod's containers are
// being removed to restart in place: its AllContainersRestarting condition
// is True. The pod's next sync then resets it (cri/podsync's ResetPod)
// instead of starting anything, as upstream's SyncPod does.
func AllContainersRestarting(st *v1.PodStatus) bool {
	c := findCondition(st.Conditions, v1.AllContainersRestarting)
	return c != nil && c.Status == v1.ConditionTrue
}

// shouldAllContainersRestart is upstream's ShouldAllContainersRestart:
// the last status says AllContainersRestarting, or the newest runtime
// instance of an init or app container exited with a code one of its
// RestartAllContainers rules matches, or the last status shows such a
// container terminated with such a code.
func shouldAllContainersRestart(pod *v1.Pod, rt *cri.PodStatus, old *v1.PodStatus) bool {
	if old != nil && AllContainersRestarting(old) {
		return true
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if st := rt.ContainerByName(c.Name); st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED &&
				podspec.RestartsAllContainers(c, st.GetExitCode()) {
				return true
			}
			if old == nil {
				continue
			}
			o := findStatus(old.InitContainerStatuses, c.Name)
			if o == nil {
				o = findStatus(old.ContainerStatuses, c.Name)
			}
			if o != nil && o.State.Terminated != nil && podspec.RestartsAllContainers(c, o.State.Terminated.ExitCode) {
				return true
			}
		}
	}
	return false
}

// allContainersRemoved reports whether the runtime holds no instance of any
// init or app container of pod (upstream's AllContainersRestartCleanedUp).
func allContainersRemoved(pod *v1.Pod, rt *cri.PodStatus) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if rt.ContainerByName(list[i].Name) != nil {
				return false
			}
		}
	}
	return true
}

// AllContainersRestartingCondition is upstream's
// GenerateAllContainersRestartingCondition, which only a pod that has a
// RestartAllContainers rule (podspec.AllContainersCouldRestart) carries:
// True, with RestartAllContainersStarted, from the exit that a
// RestartAllContainers rule matches until the runtime holds no instance of
// any init or app container; False otherwise, with PodCompleted or
// PodFailed in a terminal phase. It has no observedGeneration, as
// upstream's. old is the last status generated (nil: none).
func AllContainersRestartingCondition(pod *v1.Pod, rt *cri.PodStatus, old *v1.PodStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	case phase == v1.PodFailed:
		c.Reason = ReasonPodFailed
	case shouldAllContainersRestart(pod, rt, old) && !allContainersRemoved(pod, rt):
		c.Status, c.Reason, c.Message = v1.ConditionTrue, ReasonRestartAllContainersStarted, MessageRestartAllContainersStarted
	}
	return c
}

// restartingAll returns the status of a container the runtime no longer
// holds while its pod restarts all its containers (old, its last status,
// not waiting): waiting, with a termination that says why, and one more
// restart, as upstream's.
func restartingAll(st v1.ContainerStatus, old *v1.ContainerStatus) v1.ContainerStatus {
	st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonRestartingAllContainers, Message: msgRestartingAllContainers}}
	st.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: ReasonRestartingAllContainers, Message: msgRestartingAllContainers, ExitCode: 137}}
	st.RestartCount = old.RestartCount + 1
	return st
}

// removedByRestartAll reports whether t is the termination of a container
// removed by a restart of all its pod's containers.
func removedByRestartAll(t *v1.ContainerStateTerminated) bool {
	return t != nil && t.Reason == ReasonRestartingAllContainers
}
