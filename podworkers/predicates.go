package podworkers

import "k8s.io/apimachinery/pkg/types"

// The predicates answer other loops of the node agent about one UID. Before
// the first SyncKnownPods call the Machine may not have seen every pod yet, so
// an unknown UID is answered conservatively ("could be running"); afterwards
// an unknown UID has nothing running and nothing to keep. The package
// documentation draws when each turns true.

// IsPodKnownTerminated reports whether SyncTerminatingPod succeeded for uid:
// no container runs and none will start. It is false for unknown UIDs
// (including a force-deleted pod already forgotten), so use it to filter the
// desired set (admission), not in cleanup loops.
func (m *Machine) IsPodKnownTerminated(uid types.UID) bool {
	s := m.pods[uid]
	return s != nil && s.terminated()
}

// IsPodKnownToWorker reports whether the workers hold state for uid: it was
// passed to UpdatePod and not yet forgotten.
func (m *Machine) IsPodKnownToWorker(uid types.UID) bool {
	return m.pods[uid] != nil
}

// CouldHaveRunningContainers reports whether containers of uid may be
// running: true from the moment the pod is known until SyncTerminatingPod
// succeeds; for an unknown UID, true until SyncKnownPods has run once.
func (m *Machine) CouldHaveRunningContainers(uid types.UID) bool {
	if s := m.pods[uid]; s != nil {
		return !s.terminated()
	}
	return !m.synced
}

// ShouldPodBeFinished reports whether SyncTerminatedPod succeeded for uid (the
// status manager may then delete the pod from the API server). For an unknown
// UID it is true once SyncKnownPods has run.
func (m *Machine) ShouldPodBeFinished(uid types.UID) bool {
	if s := m.pods[uid]; s != nil {
		return s.finished
	}
	return m.synced
}

// IsPodTerminationRequested reports whether termination of uid was requested
// (deleted, evicted, killed, terminal phase, orphaned). It stays true until the
// UID is forgotten; it may be true while SyncPod is still running. It is false
// for unknown UIDs: cleanup loops use ShouldPodContainersBeTerminating.
func (m *Machine) IsPodTerminationRequested(uid types.UID) bool {
	s := m.pods[uid]
	return s != nil && s.terminationRequested()
}

// ShouldPodContainersBeTerminating reports whether a worker has observed the
// termination of uid, so that SyncPod will not run again and no container will
// start: subsystems stop setting up for the pod. For an unknown UID it is true
// once SyncKnownPods has run.
func (m *Machine) ShouldPodContainersBeTerminating(uid types.UID) bool {
	if s := m.pods[uid]; s != nil {
		return s.startedTerminating
	}
	return m.synced
}

// ShouldPodRuntimeBeRemoved reports whether runtime resources of uid other
// than containers and on-disk content (for example attached volumes) may be
// torn down: true once SyncTerminatingPod succeeded; for an unknown UID, once
// SyncKnownPods has run.
func (m *Machine) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	if s := m.pods[uid]; s != nil {
		return s.terminated()
	}
	return m.synced
}

// ShouldPodContentBeRemoved reports whether all content of uid (volumes'
// data, logs) may be removed: true as soon as an eviction of the pod is
// requested, and for a deleted pod once SyncTerminatingPod succeeded; for an
// unknown UID, once SyncKnownPods has run. A pod that merely completed keeps
// its content until it is deleted.
func (m *Machine) ShouldPodContentBeRemoved(uid types.UID) bool {
	if s := m.pods[uid]; s != nil {
		return s.evicted || (s.deleted && s.terminated())
	}
	return m.synced
}

// IsPodForMirrorPodTerminatingByFullName reports whether the static pod that
// holds the full name ("name_namespace") is terminating and not yet
// terminated, so that its mirror pod must not be deleted yet.
func (m *Machine) IsPodForMirrorPodTerminatingByFullName(fullName string) bool {
	uid, ok := m.startedByName[fullName]
	if !ok {
		return false
	}
	s := m.pods[uid]
	return s != nil && s.terminationRequested() && !s.terminated()
}
