package podworkers

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// isStaticPod reports whether pod came from a file or HTTP source rather than
// the API server.
func isStaticPod(pod *v1.Pod) bool { return podspec.IsStatic(pod) }

// podFullName is the kubelet's full name of a pod, "name_namespace".
func podFullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}

// mayStart decides whether a pod that has not started yet and is subject to the
// full-name gate may start now. ever is false if it never may (termination was
// requested before it started). A pod may start when no other pod with its full
// name has started and it is the first live pod waiting for that name, in the
// order UpdatePod first saw them. On success the pod holds the name until
// releaseName.
func (m *Machine) mayStart(s *podState) (now, ever bool) {
	if s.terminationRequested() {
		return false, false
	}
	if holder, ok := m.startedByName[s.fullName]; ok {
		return holder == s.uid, true
	}
	queue := m.waitingByName[s.fullName]
	skip := 0
	for i, uid := range queue {
		w := m.pods[uid]
		if w == nil || w.terminationRequested() {
			skip = i + 1
			continue
		}
		if uid != s.uid {
			m.waitingByName[s.fullName] = queue[i:]
			return false, true
		}
		skip = i + 1
		break
	}
	if queue = queue[skip:]; len(queue) == 0 {
		delete(m.waitingByName, s.fullName)
	} else {
		m.waitingByName[s.fullName] = queue
	}
	m.startedByName[s.fullName] = s.uid
	return true, true
}

// releaseName frees the full name s holds, if any, and wakes the next pod
// waiting for it, so that it starts without waiting for a backoff.
func (m *Machine) releaseName(s *podState) {
	if !s.gated || m.startedByName[s.fullName] != s.uid {
		return
	}
	delete(m.startedByName, s.fullName)
	for _, uid := range m.waitingByName[s.fullName] {
		w := m.pods[uid]
		if w == nil || w.terminationRequested() || !w.hasPending {
			continue
		}
		m.wake(w)
		return
	}
}
