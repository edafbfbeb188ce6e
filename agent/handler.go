package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// The Agent is the sync loop's handler: configuration changes become pod
// worker updates, as in upstream kubelet's Handle* methods.
var _ syncloop.SyncHandler = (*Agent)(nil)

// gcEvery is how many cleanups pass between container garbage collections:
// every minute, as upstream (cleanups run every 2s). The first comes a
// minute after the start, as upstream's second: its first runs before any
// pod has started, where a collection at the first cleanup, two seconds
// in, would remove a crash-looping container's first attempt while its
// status still names it as the last termination (kubectl logs --previous).
const gcEvery = 30

// HandlePodAdditions admits new pods and starts their workers.
func (a *Agent) HandlePodAdditions(pods []*v1.Pod) {
	sortByCreation(pods)
	for _, pod := range pods {
		a.pods.Add(pod)
		if podspec.IsMirror(pod) {
			// A mirror pod is the API server's copy of a static pod: it
			// is reported on, never run. A new one (made again after it
			// was deleted, say) gets the static pod's status at once,
			// which the status manager had pushed to the old one.
			if static, ok := a.pods.GetPodByMirrorPod(pod); ok {
				a.status.PushAgain(static.UID)
			}
			continue
		}
		a.mu.Lock()
		a.seen[pod.UID] = struct{}{}
		if a.latency[pod.UID] == nil {
			a.admitted++
			a.latency[pod.UID] = &startup{added: a.clock.Now(), seq: a.admitted}
		}
		a.mu.Unlock()
		// As upstream, a pod already terminal, or being stopped, is not
		// admitted again: its worker finishes what is left of it.
		if !a.workers.IsPodTerminationRequested(pod.UID) && !terminalPhase(pod.Status.Phase) {
			// A pod is admitted as the node allocated it (after a
			// restart, a resize asked meanwhile is weighed as a resize),
			// and its allocation recorded.
			allocated, _ := a.alloc.AllocatedPod(pod)
			if ok, reason, msg := a.admit(allocated); !ok {
				a.reject(pod, reason, msg)
				continue
			}
			a.alloc.SetAllocated(allocated)
			a.alloc.HandleResize(pod)
		}
		a.prober.AddPod(pod)
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	}
	a.alloc.Flush()
}

// admit runs the admission chain (newAdmission) with the other pods the
// node has admitted, and returns the first refusal with its reason and
// message.
func (a *Agent) admit(pod *v1.Pod) (ok bool, reason, message string) {
	return a.admission.Admit(pod, a.otherAdmittedPods(pod))
}

// reject records a pod that cannot be admitted: it is shown Failed with the
// reason and message and never runs, and no other pod is affected.
func (a *Agent) reject(pod *v1.Pod, reason, msg string) {
	unsettled := a.workers.CouldHaveRunningContainers(pod.UID)
	a.mu.Lock()
	a.rejected[pod.UID] = struct{}{}
	if unsettled {
		a.unsettled = append(a.unsettled, pod.UID)
	}
	a.mu.Unlock()
	// The status says so, as upstream's rejectPod writes it, and reaches
	// the API server through the status manager.
	st := v1.PodStatus{QOSClass: podspec.QOSClass(pod), Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg}
	if err := a.status.Set(pod, st); err != nil {
		a.log.Warn("Cannot record the status of a rejected pod", "pod", podDesc(pod), "err", err)
	}
	a.events.Eventf(pod, v1.EventTypeWarning, reason, "%s", msg)
	a.log.Warn("Pod rejected", "pod", podDesc(pod), "reason", reason, "message", msg)
}

// takeUnsettledRejections returns, once, the pods refused while the workers
// could not yet tell that they run nothing.
func (a *Agent) takeUnsettledRejections() []types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.unsettled
	a.unsettled = nil
	return u
}

func (a *Agent) isRejected(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.rejected[uid]
	return ok
}

// HandlePodUpdates passes changed pods to their workers; a pod whose
// containers' resources changed (an in-place resize) is weighed first
// (allocation.Manager.HandleResize).
func (a *Agent) HandlePodUpdates(pods []*v1.Pod) {
	for _, pod := range pods {
		a.pods.Update(pod)
		if podspec.IsMirror(pod) || a.isRejected(pod.UID) {
			continue
		}
		if !a.workers.IsPodTerminationRequested(pod.UID) {
			a.alloc.HandleResize(pod)
		}
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod})
	}
	a.alloc.Flush()
}

// HandlePodRemoves terminates pods that left the configuration; the room
// they leave is offered to the deferred resizes.
func (a *Agent) HandlePodRemoves(pods []*v1.Pod) {
	for _, pod := range pods {
		a.pods.Remove(pod)
		if podspec.IsMirror(pod) {
			continue
		}
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, Pod: pod})
	}
	a.retryPendingResizes()
}

// HandlePodReconcile records status-only changes; a pod the configuration
// now reports terminal is synced so its worker notices.
func (a *Agent) HandlePodReconcile(pods []*v1.Pod) {
	for _, pod := range pods {
		a.pods.Update(pod)
		// A refused pod never reaches the workers: the Failed phase its
		// refusal wrote, coming back from the API server, is no reason to
		// start one (its status would then grow containers and conditions
		// upstream's refusal does not have).
		if podspec.IsMirror(pod) || a.isRejected(pod.UID) {
			continue
		}
		// A pod the API shows finished, or whose readiness gates another
		// writer just changed, is synced so that its status is reported
		// anew; any other status-only change waits for the next sync.
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed || status.NeedsReadinessReconcile(pod) {
			a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, Pod: pod})
		}
	}
}

// HandlePodSyncs resyncs pods (runtime events, probe results).
func (a *Agent) HandlePodSyncs(pods []*v1.Pod) {
	for _, pod := range pods {
		if a.isRejected(pod.UID) {
			continue
		}
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodSync, Pod: pod})
	}
}

// handlePLEGEvents takes a pod's events of one relist from the PLEG: they
// become one sync of the pod. The PLEG has written the status they describe
// to the cache already, so the worker's sync sees them all. (Taken one at a
// time from a channel, as upstream's sync loop does, the second event of a
// relist may reach a worker already syncing for the first, and cost a
// second sync a relist later.) A pod whose containers were only removed, or
// that is no longer desired, needs no sync: housekeeping deals with what is
// left of it.
func (a *Agent) handlePLEGEvents(events []pleg.Event) {
	for i := 0; i < len(events); {
		uid, worthy := events[i].PodUID, false
		for ; i < len(events) && events[i].PodUID == uid; i++ {
			worthy = worthy || events[i].Type != pleg.ContainerRemoved
		}
		if !worthy {
			continue
		}
		if pod, ok := a.pods.GetPodByUID(uid); ok && !podspec.IsMirror(pod) {
			a.HandlePodSyncs([]*v1.Pod{pod})
		}
	}
}

// HandlePodCleanups is housekeeping: the workers learn which pods are
// desired, orphans found in the runtime are killed, finished pods are
// forgotten by every block, and dead containers are collected.
func (a *Agent) HandlePodCleanups(ctx context.Context) error {
	// The pod cgroups first, before the pods are read (podCgroups).
	cgroupPods := a.podCgroups()
	desired := a.pods.GetPods()
	known := a.workers.SyncKnownPods(desired)
	// A pod refused before the workers first learnt the desired pods had
	// its Failed phase held back (its containers could have been running
	// then); now that they cannot, it is written.
	for _, uid := range a.takeUnsettledRejections() {
		a.status.PushAgain(uid)
	}
	want := make(map[types.UID]struct{}, len(desired))
	for _, p := range desired {
		want[p.UID] = struct{}{}
	}
	a.restartForgotten(desired, known)
	a.prober.CleanupPods(want)

	sandboxes, err := a.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("housekeeping: list sandboxes: %w", err)
	}
	containers, err := a.rt.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("housekeeping: list containers: %w", err)
	}
	alive := map[types.UID]*v1.Pod{}
	note := func(labels map[string]string) *v1.Pod {
		uid := cri.PodUIDFromLabels(labels)
		if uid == "" {
			return nil
		}
		p := alive[uid]
		if p == nil {
			p = &v1.Pod{}
			p.UID, p.Name, p.Namespace = uid, labels[cri.PodNameLabel], labels[cri.PodNamespaceLabel]
		}
		return p
	}
	for _, sb := range sandboxes {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			if p := note(sb.GetLabels()); p != nil {
				alive[p.UID] = p
			}
		}
	}
	for _, c := range containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if p := note(c.GetLabels()); p != nil {
				alive[p.UID] = p
			}
		}
	}
	for uid, p := range alive {
		if _, ok := want[uid]; ok || a.workers.IsPodKnownToWorker(uid) {
			continue
		}
		a.log.Info("Killing an orphaned pod found in the runtime", "pod", podDesc(p))
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, RunningPod: p})
	}

	// Forget finished pods that are no longer desired.
	for _, uid := range a.finished(want, known) {
		for _, f := range a.forgetters {
			f.RemovePod(uid)
		}
	}
	a.alloc.RemoveOrphanedPods(func(uid types.UID) bool {
		_, desired := want[uid]
		return desired || a.workers.IsPodKnownToWorker(uid)
	})
	a.cleanupOrphanedPodDirs(want)
	a.cleanupPodCgroups(cgroupPods, known)
	if a.opts.Cluster.MirrorPods != nil {
		a.syncMirrorPods(ctx)
	}

	a.mu.Lock()
	gc := a.cleanups%gcEvery == gcEvery-1
	qos := a.cleanups%cgroupHousekeepingsPerQOSUpdate == 0
	retryResizes := a.cleanups%resizeRetryEvery == resizeRetryEvery-1
	a.cleanups++
	a.mu.Unlock()
	if retryResizes {
		a.retryPendingResizes()
	}
	if qos {
		// Periodically too, as upstream's QoS manager every minute.
		a.updateQOSCgroups()
	}
	if gc {
		if err := a.syncer.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 1, MaxContainers: -1}, a.podExists); err != nil {
			a.log.Warn("Container garbage collection failed", "err", err)
		}
	}
	return nil
}

// restartForgotten re-sends, as a creation, every desired pod the workers
// no longer know, as SyncKnownPods asks of its caller: a pod removed and
// added again while it was terminating (a static manifest put back, say)
// was forgotten once its termination ended, and starts again now.
func (a *Agent) restartForgotten(desired []*v1.Pod, known map[types.UID]podworkers.WorkerSync) {
	for _, p := range desired {
		if _, ok := known[p.UID]; ok || podspec.IsMirror(p) || a.isRejected(p.UID) {
			continue
		}
		a.log.Info("Restarting a desired pod the pod workers no longer know", "pod", podDesc(p))
		a.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: p})
	}
}

// finished returns, and forgets, the pods the agent saw that are neither
// desired nor known to the workers any more.
func (a *Agent) finished(want map[types.UID]struct{}, known map[types.UID]podworkers.WorkerSync) []types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []types.UID
	for uid := range a.seen {
		if _, ok := want[uid]; ok {
			continue
		}
		if _, ok := known[uid]; ok {
			continue
		}
		out = append(out, uid)
		delete(a.seen, uid)
		delete(a.rejected, uid)
		delete(a.latency, uid)
	}
	return out
}

// syncMirrorPods creates the mirror pods of static pods that lack one,
// recreates outdated ones and deletes orphans, as upstream's housekeeping.
// While the static pod that holds a full name is terminating, the name is
// left alone: its mirror pod stays through the grace period, and a new
// static pod of that name (an updated manifest) gets its own mirror pod
// once it starts.
func (a *Agent) syncMirrorPods(ctx context.Context) {
	terminating := func(p *v1.Pod) bool {
		return a.workers.IsPodForMirrorPodTerminatingByFullName(p.Name + "_" + p.Namespace)
	}
	var static, mirrors []*v1.Pod
	for _, p := range a.pods.GetPods() {
		if podspec.IsStatic(p) && !a.workers.IsPodTerminationRequested(p.UID) && !terminating(p) {
			static = append(static, p)
		}
	}
	for _, m := range a.pods.GetMirrorPods() {
		if !terminating(m) {
			mirrors = append(mirrors, m)
		}
	}
	if err := a.opts.Cluster.MirrorPods.SyncMirrorPods(ctx, static, mirrors); err != nil {
		a.log.Warn("Mirror pods not in sync", "err", err)
	}
}
