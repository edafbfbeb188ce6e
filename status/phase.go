package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Phase returns the pod's phase from its init container and container
// statuses, with upstream kubelet's rules:
//
//   - Failed when a regular init container failed and the restart policy
//     is Never;
//   - Pending while a regular init container has not succeeded, while a
//     sidecar has not started (unless a regular container of the current
//     sandbox already exists: podHasInitialized), or while a container
//     waits without ever having terminated;
//   - Running when a container (or sidecar) runs and every container has a
//     status;
//   - when every container stopped: Succeeded or Failed if the pod is
//     terminal (podIsTerminal), else Running under restart policy Always,
//     Succeeded if all exited 0, Failed under Never, Running under
//     OnFailure (a failed container restarts);
//   - Pending otherwise.
//
// A waiting container that terminated before counts as stopped; terminated
// sidecars are ignored. Static pods never get a terminal phase from
// podIsTerminal, as upstream.
func Phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
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
			if st.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}

	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
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
		st := findStatus(statuses, spec.Containers[i].Name)
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
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
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
		if spec.RestartPolicy == v1.RestartPolicyAlways || spec.RestartPolicy == "" {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}

// server (a file or an HTTP URL).
func IsStatic(pod *v1.Pod) bool { return podspec.IsStatic(pod) }

// pod.
func IsMirror(pod *v1.Pod) bool { return podspec.IsMirror(pod) }
