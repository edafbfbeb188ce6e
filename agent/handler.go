package agent

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// handler is the sync loop's handler: configuration changes become pod
// worker updates, as in upstream kubelet's Handle* methods, and
// housekeeping (HandlePodCleanups) collects what finished pods leave. It
// admits pods (admission), records their allocations (alloc) and refusals
// (records), and holds only the blocks those steps use.
type handler struct {
	*podView  // pods, workers, status, records
	prober    *prober.Manager
	alloc     *allocation.Manager
	admission admission.Chain // set once built (newAdmission)
	cgroups   *podCgroups
	gc        *podsync.Syncer  // collects dead containers
	deletor   *podsync.Deletor // removes a pod's dead containers as they die
	cache     *pleg.Cache      // the runtime's view of each pod, the PLEG's
	devices   *devices.Manager
	dra       *dra.Manager // unprepares the claims of pods no longer active
	rt        Runtime
	mirrors   MirrorPods
	// forgetters forget a finished pod that is no longer desired.
	forgetters []podForgetter
	// declared are the node's declared features (status.declaredFeatures).
	declared []string
	rootDir  string
	events   EventRecorder
	clock    Clock
	log      *slog.Logger
}

var _ syncloop.SyncHandler = (*handler)(nil)

// podForgetter is a part of the node that keeps something per pod and
// forgets it once the pod is finished and no longer desired.
type podForgetter interface{ RemovePod(uid types.UID) }

// forgetFunc adapts a function to podForgetter.
type forgetFunc func(uid types.UID)

// RemovePod calls f.
func (f forgetFunc) RemovePod(uid types.UID) { f(uid) }

// HandlePodAdditions admits new pods and starts their workers.
func (h *handler) HandlePodAdditions(pods []*v1.Pod) {
	start := h.clock.Now()
	sortByCreation(pods)
	for _, pod := range pods {
		h.pods.Add(pod)
		if podspec.IsMirror(pod) {
			// A mirror pod is the API server's copy of a static pod: it
			// is reported on, never run. A new one (made again after it
			// was deleted, say) gets the static pod's status at once,
			// which the status manager had pushed to the old one.
			if static, ok := h.pods.GetPodByMirrorPod(pod); ok {
				h.status.PushAgain(static.UID)
			}
			continue
		}
		h.records.add(pod)
		// As upstream, a pod already terminal, or being stopped, is not
		// admitted again: its worker finishes what is left of it.
		if !h.workers.IsPodTerminationRequested(pod.UID) && !podspec.IsTerminal(pod.Status.Phase) {
			// A pod is admitted as the node allocated it (after a
			// restart, a resize asked meanwhile is weighed as a resize),
			// and its allocation recorded.
			allocated, _ := h.alloc.AllocatedPod(pod)
			if ok, reason, msg := h.admit(allocated); !ok {
				h.reject(pod, reason, msg)
				continue
			}
			h.alloc.SetAllocated(allocated)
			h.alloc.HandleResize(pod)
		}
		h.prober.AddPod(pod)
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod, StartTime: start})
	}
	h.alloc.Flush()
}

// admit runs the admission chain (newAdmission) with the other pods the
// node has admitted, and returns the first refusal with its reason and
// message.
func (h *handler) admit(pod *v1.Pod) (ok bool, reason, message string) {
	return h.admission.Admit(pod, h.others(pod))
}

// reject records a pod that cannot be admitted: it is shown Failed with the
// reason and message and never runs, and no other pod is affected.
func (h *handler) reject(pod *v1.Pod, reason, msg string) {
	h.records.reject(pod.UID, h.workers.CouldHaveRunningContainers(pod.UID))
	// The status says so, as upstream's rejectPod writes it, and reaches
	// the API server through the status manager.
	st := v1.PodStatus{QOSClass: podspec.QOSClass(pod), Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg}
	if err := h.status.Set(pod, st); err != nil {
		h.log.Warn("Cannot record the status of a rejected pod", "pod", podDesc(pod), "err", err)
	}
	h.events.Eventf(pod, v1.EventTypeWarning, reason, "%s", msg)
	h.log.Warn("Pod rejected", "pod", podDesc(pod), "reason", reason, "message", msg)
}

// HandlePodUpdates passes changed pods to their workers; a pod whose
// containers' resources changed (an in-place resize) is weighed first
// (allocation.Manager.HandleResize).
func (h *handler) HandlePodUpdates(pods []*v1.Pod) {
	start := h.clock.Now()
	for _, pod := range pods {
		old, had := h.pods.GetPodByUID(pod.UID)
		h.pods.Update(pod)
		if podspec.IsMirror(pod) || h.records.isRejected(pod.UID) {
			continue
		}
		if had {
			h.checkUpdateFeatures(old, pod)
		}
		if !h.workers.IsPodTerminationRequested(pod.UID) {
			h.alloc.HandleResize(pod)
		}
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod, StartTime: start})
	}
	h.alloc.Flush()
}

// EventFailedNodeDeclaredFeaturesCheck is upstream's event for a pod update
// that needs node features the node does not declare.
const EventFailedNodeDeclaredFeaturesCheck = "FailedNodeDeclaredFeaturesCheck"

// checkUpdateFeatures warns, as upstream kubelet does, of a pod update
// that needs node features the node does not declare
// (podspec.NodeFeaturesForUpdate), which an API server older than 1.36
// lets through: a Warning event FailedNodeDeclaredFeaturesCheck. The
// update goes on to the pod's worker all the same; the node does not act
// on what it lacks. Both features NodeFeaturesForUpdate names in 1.36
// (the resize of init containers and of pod-level resources) are ones the
// agent declares: the check speaks only of features to come.
func (h *handler) checkUpdateFeatures(old, pod *v1.Pod) {
	var missing []string
	for _, name := range podspec.NodeFeaturesForUpdate(old, pod) {
		if !slices.Contains(h.declared, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := strings.Join(missing, ", ")
	h.log.Error("Pod requires node features that are not available", "pod", podDesc(pod), "missingFeatures", msg)
	h.events.Eventf(pod, v1.EventTypeWarning, EventFailedNodeDeclaredFeaturesCheck, "Pod requires node features that are not available: %s", msg)
}

// HandlePodRemoves terminates pods that left the configuration; the room
// they leave is offered to the deferred resizes.
func (h *handler) HandlePodRemoves(pods []*v1.Pod) {
	for _, pod := range pods {
		h.pods.Remove(pod)
		if podspec.IsMirror(pod) {
			continue
		}
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: pod})
	}
	h.retryPendingResizes()
}

// HandlePodReconcile records status-only changes; a pod the configuration
// now reports terminal is synced so its worker notices.
func (h *handler) HandlePodReconcile(pods []*v1.Pod) {
	start := h.clock.Now()
	for _, pod := range pods {
		h.pods.Update(pod)
		// A refused pod never reaches the workers: the Failed phase its
		// refusal wrote, coming back from the API server, is no reason to
		// start one (its status would then grow containers and conditions
		// upstream's refusal does not have).
		if podspec.IsMirror(pod) || h.records.isRejected(pod.UID) {
			continue
		}
		// A pod the API shows finished, or whose readiness gates another
		// writer just changed, is synced so that its status is reported
		// anew; any other status-only change waits for the next sync.
		if podspec.IsTerminal(pod.Status.Phase) || status.NeedsReadinessReconcile(pod) {
			h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, Pod: pod, StartTime: start})
		}
	}
}

// HandlePodSyncs resyncs pods (runtime events, probe results).
func (h *handler) HandlePodSyncs(pods []*v1.Pod) {
	start := h.clock.Now()
	for _, pod := range pods {
		if h.records.isRejected(pod.UID) {
			continue
		}
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, Pod: pod, StartTime: start})
	}
}

// handlePLEGEvents takes a pod's events of one relist from the PLEG: they
// become one sync of the pod. The PLEG has written the status they describe
// to the cache already, so the worker's sync sees them all. (Taken one at a
// time from a channel, as upstream's sync loop does, the second event of a
// relist may reach a worker already syncing for the first, and cost a
// second sync a relist later.) A pod whose containers were only removed, or
// that is no longer desired, needs no sync: housekeeping deals with what is
// left of it. Then, as upstream's sync loop, the pod's dead containers are
// cleaned up after each ContainerDied (cleanUpDeadContainers).
func (h *handler) handlePLEGEvents(events []pleg.Event) {
	for i := 0; i < len(events); {
		first, uid, worthy := i, events[i].PodUID, false
		for ; i < len(events) && events[i].PodUID == uid; i++ {
			worthy = worthy || events[i].Type != pleg.ContainerRemoved
		}
		if worthy {
			if pod, ok := h.pods.GetPodByUID(uid); ok && !podspec.IsMirror(pod) {
				h.HandlePodSyncs([]*v1.Pod{pod})
			}
		}
		h.cleanUpDeadContainers(uid, events[first:i])
	}
}

// cleanUpDeadContainers is upstream's cleanUpContainersInPod for each
// ContainerDied event of one pod: the dead containers that
// podsync.DeadContainersToRemove chooses from the pod's cached status (the
// older dead instances of the container that died, or all of them once the
// workers say the pod's content may be removed) go to the deletor, which
// removes them on its own goroutine.
func (h *handler) cleanUpDeadContainers(uid types.UID, events []pleg.Event) {
	var (
		st        *cri.PodStatus
		removable bool
	)
	for _, e := range events {
		if e.Type != pleg.ContainerDied {
			continue
		}
		if st == nil {
			var err error
			if st, err = h.cache.Get(uid); err != nil || st == nil {
				return // as upstream, nothing without a status
			}
			removable = h.workers.ShouldPodContentBeRemoved(uid)
		}
		h.deletor.Enqueue(podsync.DeadContainersToRemove(st, e.ContainerID, deadPerContainer, removable)...)
	}
}

// podsToSync are the pods the sync loop syncs at its next tick beside those
// due: those past their active deadline, and those holding a device (a
// device plugin's or a DRA driver's) whose health changed (their
// allocatedResourcesStatus is due).
func (h *handler) podsToSync(now time.Time) []*v1.Pod {
	pods := h.podsPastDeadline(now)
	changed := h.dra.TakeHealthChanges()
	if h.devices != nil {
		changed = append(changed, h.devices.TakeHealthChanges()...)
	}
	for _, uid := range changed {
		if p, ok := h.pods.GetPodByUID(uid); ok && !slices.ContainsFunc(pods, func(q *v1.Pod) bool { return q.UID == uid }) {
			pods = append(pods, p)
		}
	}
	return pods
}

// podsPastDeadline returns the pods whose spec.activeDeadlineSeconds has
// passed and whose status is not terminal yet: the sync loop syncs them
// every second until it does, as upstream's active deadline handler has its
// pods synced.
func (h *handler) podsPastDeadline(now time.Time) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range h.pods.GetPods() {
		if pod.Spec.ActiveDeadlineSeconds == nil {
			continue
		}
		st, ok := h.status.GetPodStatus(pod.UID)
		if !ok {
			st = pod.Status
		}
		if !podspec.IsTerminal(st.Phase) && status.PastActiveDeadline(pod, st.StartTime, now) {
			out = append(out, pod)
		}
	}
	return out
}

// retryPendingResizes takes up the deferred resizes again; a pod whose
// resize conditions change is synced so that its status says so.
func (h *handler) retryPendingResizes() {
	for _, p := range h.alloc.RetryPendingResizes() {
		h.HandlePodSyncs([]*v1.Pod{p})
	}
}
