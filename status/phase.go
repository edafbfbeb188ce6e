package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Phase returns the pod's phase from its init container and container
// statuses, with upstream kubelet's rules (getPhase, with container restart
// rules on, as they are by default since 1.35):
//
//   - Failed when a regular init container failed and will not be
//     restarted (podspec.RestartsAfterExit on its exit code: the
//     container's rules, its own restartPolicy, else the pod's);
//   - Pending while a regular init container has not succeeded, while a
//     sidecar has not started (unless a regular container of the current
//     sandbox already exists: podHasInitialized), or while a container
//     waits without ever having terminated;
//   - Running when a container (or sidecar) runs and every container has a
//     status;
//   - when every container stopped: Succeeded or Failed if the pod is
//     terminal (podIsTerminal); else Running if any stopped container will
//     be restarted (RestartsAfterExit on its last exit code: under the
//     pod's Always every one, under OnFailure a failed one, under Never one
//     whose own policy or rule says so), Succeeded if all exited 0, Failed
//     otherwise;
//   - Pending otherwise.
//
// A waiting container that terminated before counts as stopped, with the
// exit code of that termination; terminated sidecars are ignored. A
// container removed by a restart of all the pod's containers (its
// termination's reason RestartingAllContainers) will be restarted
// (RestartAllContainersOnContainerExits). Static pods never get a terminal
// phase from podIsTerminal, as upstream.
func Phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	// A container removed by a restart of all the pod's containers is
	// restarting, whatever its exit code says.
	restarts := func(c *v1.Container, t *v1.ContainerStateTerminated) bool {
		return podspec.RestartsAfterExit(pod, c, t.ExitCode) || removedByRestartAll(t)
	}
	failed := func(c *v1.Container, t *v1.ContainerStateTerminated) bool {
		return t.ExitCode != 0 && !restarts(c, t)
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if podspec.IsSidecar(c) {
			continue
		}
		st := findStatus(initStatuses, c.Name)
		switch {
		case st == nil:
			pendingInit++
		case st.State.Running != nil:
			pendingInit++
		case st.State.Terminated != nil:
			if failed(c, st.State.Terminated) {
				failedInit++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				if failed(c, t) {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}

	unknown, running, waiting, stopped, succeeded, restarting := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !podspec.IsSidecar(c) {
			continue
		}
		st := findStatus(initStatuses, c.Name)
		switch {
		case st == nil:
			unknown++
		case st.State.Running != nil:
			if st.Started == nil || !*st.Started {
				pendingSidecars++
			}
			running++
		case st.State.Terminated != nil:
			// A stopped sidecar does not count.
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st := findStatus(statuses, c.Name)
		switch {
		case st == nil:
			unknown++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
			if restarts(c, st.State.Terminated) {
				restarting++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				stopped++
				if restarts(c, t) {
					restarting++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !podHasInitialized):
		return v1.PodPending
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !podspec.IsStatic(pod) {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if restarting > 0 {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	default:
		return v1.PodPending
	}
}

// server (a file or an HTTP URL).
func IsStatic(pod *v1.Pod) bool { return podspec.IsStatic(pod) }

// pod.
func IsMirror(pod *v1.Pod) bool { return podspec.IsMirror(pod) }
