package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/volume"
)

// gcEvery is how many cleanups pass between container garbage collections:
// every minute, as upstream (cleanups run every 2s). The first comes a
// minute after the start, as upstream's second: its first runs before any
// pod has started, where a collection at the first cleanup, two seconds
// in, would remove a crash-looping container's first attempt while its
// status still names it as the last termination (kubectl logs --previous).
const gcEvery = 30

// deadPerContainer is how many dead instances of each container of a pod
// are kept, newest first, by the garbage collection and by the deletor that
// removes them as they die (podsync.DeadContainersToRemove): upstream's
// default MaxPerPodContainer.
const deadPerContainer = 1

// HandlePodCleanups is housekeeping: the workers learn which pods are
// desired, orphans found in the runtime are killed, finished pods are
// forgotten by every block, and dead containers are collected.
func (h *handler) HandlePodCleanups(ctx context.Context) error {
	// The pod cgroups first, before the pods are read (podCgroups).
	cgroupPods := h.cgroups.list()
	desired := h.pods.GetPods()
	known := h.workers.SyncKnownPods(desired)
	// A pod refused before the workers first learnt the desired pods had
	// its Failed phase held back (its containers could have been running
	// then); now that they cannot, it is written.
	for _, uid := range h.records.takeUnsettled() {
		h.status.PushAgain(uid)
	}
	want := make(map[types.UID]struct{}, len(desired))
	for _, p := range desired {
		want[p.UID] = struct{}{}
	}
	h.restartForgotten(desired, known)
	h.prober.CleanupPods(want)

	sandboxes, err := h.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("housekeeping: list sandboxes: %w", err)
	}
	containers, err := h.rt.ListContainers(ctx, nil)
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
		if _, ok := want[uid]; ok || h.workers.IsPodKnownToWorker(uid) {
			continue
		}
		h.log.Info("Killing an orphaned pod found in the runtime", "pod", podDesc(p))
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodKill, RunningPod: p})
	}
	// Claims still recorded for a pod neither desired nor known to a
	// worker are unprepared, as upstream's DRA reconcile loop does.
	if err := h.dra.UnprepareInactive(ctx, func(uid types.UID) bool {
		_, ok := want[uid]
		return ok || h.workers.IsPodKnownToWorker(uid)
	}); err != nil {
		h.log.Info("Failed to unprepare the resource claims of inactive pods", "err", err)
	}

	// Forget finished pods that are no longer desired.
	for _, uid := range h.records.finished(want, known) {
		for _, f := range h.forgetters {
			f.RemovePod(uid)
		}
	}
	h.alloc.RemoveOrphanedPods(func(uid types.UID) bool {
		_, desired := want[uid]
		return desired || h.workers.IsPodKnownToWorker(uid)
	})
	h.cleanupOrphanedPodDirs(want)
	h.cgroups.cleanup(cgroupPods, known)
	if h.mirrors != nil {
		h.syncMirrorPods(ctx)
	}

	n := h.records.nextCleanup()
	gc := n%gcEvery == gcEvery-1
	qos := n%cgroupHousekeepingsPerQOSUpdate == 0
	retryResizes := n%resizeRetryEvery == resizeRetryEvery-1
	if retryResizes {
		h.retryPendingResizes()
	}
	if qos {
		// Periodically too, as upstream's QoS manager every minute.
		h.cgroups.updateQOS()
	}
	if gc {
		if err := h.gc.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: deadPerContainer, MaxContainers: -1}, h.exists); err != nil {
			h.log.Warn("Container garbage collection failed", "err", err)
		}
	}
	return nil
}

// restartForgotten re-sends, as a creation, every desired pod the workers
// no longer know, as SyncKnownPods asks of its caller: a pod removed and
// added again while it was terminating (a static manifest put back, say)
// was forgotten once its termination ended, and starts again now.
func (h *handler) restartForgotten(desired []*v1.Pod, known map[types.UID]podworkers.WorkerSync) {
	start := h.clock.Now()
	for _, p := range desired {
		if _, ok := known[p.UID]; ok || podspec.IsMirror(p) || h.records.isRejected(p.UID) {
			continue
		}
		h.log.Info("Restarting a desired pod the pod workers no longer know", "pod", podDesc(p))
		h.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: p, StartTime: start})
	}
}

// syncMirrorPods creates the mirror pods of static pods that lack one,
// recreates outdated ones and deletes orphans, as upstream's housekeeping.
// While the static pod that holds a full name is terminating, the name is
// left alone: its mirror pod stays through the grace period, and a new
// static pod of that name (an updated manifest) gets its own mirror pod
// once it starts.
func (h *handler) syncMirrorPods(ctx context.Context) {
	terminating := func(p *v1.Pod) bool {
		return h.workers.IsPodForMirrorPodTerminatingByFullName(p.Name + "_" + p.Namespace)
	}
	var static, mirrors []*v1.Pod
	ended := map[string]bool{} // full names of static pods still desired whose termination was asked
	for _, p := range h.pods.GetPods() {
		switch {
		case !podspec.IsStatic(p):
		case h.workers.IsPodTerminationRequested(p.UID):
			ended[p.Name+"_"+p.Namespace] = true
		case !terminating(p):
			static = append(static, p)
		}
	}
	for _, m := range h.pods.GetMirrorPods() {
		// The mirror pod of a static pod that ended (a Never pod that
		// completed) is no orphan: it stays, with the pod's final status,
		// as upstream's, which creates and deletes mirror pods only while
		// their static pod runs or once it is gone.
		if !terminating(m) && !ended[m.Name+"_"+m.Namespace] {
			mirrors = append(mirrors, m)
		}
	}
	if err := h.mirrors.SyncMirrorPods(ctx, static, mirrors); err != nil {
		h.log.Warn("Mirror pods not in sync", "err", err)
	}
}

// cleanupOrphanedPodDirs removes the directories of pods that are neither
// desired nor known to the workers, as upstream's housekeeping does, once
// the volume manager has torn down their volumes: a directory whose
// volumes/ or volume-subpaths/ (pinned subPaths, bind mounts into
// volumes) still holds anything is left for a later pass, as upstream's,
// so nothing mounted is ever removed through.
func (h *handler) cleanupOrphanedPodDirs(want map[types.UID]struct{}) {
	entries, err := os.ReadDir(filepath.Join(h.rootDir, "pods"))
	if err != nil {
		h.log.Warn("Cannot list pod directories", "err", err)
		return
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if _, ok := want[uid]; ok || !e.IsDir() || h.workers.IsPodKnownToWorker(uid) {
			continue
		}
		dir, err := podDir(h.rootDir, uid)
		if err != nil {
			continue
		}
		if vols, err := os.ReadDir(volume.PodVolumesDir(h.rootDir, uid)); err == nil && len(vols) > 0 {
			h.log.Debug("Orphaned pod directory still has volumes; not removing it yet", "podUID", uid)
			continue
		}
		if pins, err := os.ReadDir(volume.PodSubPathsDir(h.rootDir, uid)); err == nil && len(pins) > 0 {
			h.log.Debug("Orphaned pod directory still has volume subpaths; not removing it yet", "podUID", uid)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			h.log.Warn("Failed to remove an orphaned pod directory", "podUID", uid, "err", err)
		}
	}
}
