package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/volume"
)

// The Agent is the pod workers' Syncer: it ties the runtime status, the
// status block, the prober and cri/podsync together, as upstream kubelet's
// SyncPod, SyncTerminatingPod and SyncTerminatedPod do.
var _ podworkers.Syncer = (*Agent)(nil)

// generate builds the pod's status from the runtime's view and what the
// agent knows, and stores it in the status manager.
func (a *Agent) generate(pod *v1.Pod, rs *cri.PodStatus, terminal bool, edit podworkers.PodStatusFunc) (v1.PodStatus, error) {
	in := status.Input{Pod: pod, Runtime: rs, PodIsTerminal: terminal, RuntimeName: a.runtimeName(),
		Probes: a.prober, Waiting: a.syncer, Messages: a.msgs, Now: a.clock.Now()}
	if a.opts.Cluster.ReportHostIPs {
		in.HostIPs = a.opts.Node.HostIPs
	}
	old, ok := a.status.GetPodStatus(pod.UID)
	if ok {
		in.Old = &old
	} else {
		old = pod.Status
	}
	st, err := status.Generate(in)
	if err != nil {
		return st, err
	}
	if !terminal {
		a.alloc.CheckResizeInProgress(pod, actuation(rs))
	}
	st.Conditions = append(st.Conditions, a.alloc.Conditions(pod.UID)...)
	if a.devices != nil {
		a.devices.UpdateAllocatedResourcesStatus(pod, &st)
	}
	if st.Reason == status.ReasonDeadlineExceeded && old.Reason != status.ReasonDeadlineExceeded {
		a.events.Eventf(pod, v1.EventTypeNormal, status.ReasonDeadlineExceeded, "%s", status.MessageDeadlineExceeded)
	}
	if edit != nil {
		edit(&st)
	}
	if err := a.status.Set(pod, st); err != nil && !errors.Is(err, status.ErrIllegalTransition) {
		return st, err
	}
	a.observeStartup(pod.UID, &st)
	return st, nil
}

// podsToSync are the pods the sync loop syncs at its next tick beside those
// due: those past their active deadline, and those holding a device whose
// health changed (their allocatedResourcesStatus is due).
func (a *Agent) podsToSync(now time.Time) []*v1.Pod {
	pods := a.podsPastDeadline(now)
	if a.devices == nil {
		return pods
	}
	for _, uid := range a.devices.TakeHealthChanges() {
		if p, ok := a.pods.GetPodByUID(uid); ok && !slices.ContainsFunc(pods, func(q *v1.Pod) bool { return q.UID == uid }) {
			pods = append(pods, p)
		}
	}
	return pods
}

// podsPastDeadline returns the pods whose spec.activeDeadlineSeconds has
// passed and whose status is not terminal yet: the sync loop syncs them
// every second until it does, as upstream's active deadline handler has its
// pods synced.
func (a *Agent) podsPastDeadline(now time.Time) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range a.pods.GetPods() {
		if pod.Spec.ActiveDeadlineSeconds == nil {
			continue
		}
		st, ok := a.status.GetPodStatus(pod.UID)
		if !ok {
			st = pod.Status
		}
		terminal := st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed
		if !terminal && status.PastActiveDeadline(pod, st.StartTime, now) {
			out = append(out, pod)
		}
	}
	return out
}

// observeStartup records, once per pod, how long after the agent first saw
// it the pod was first Running (kubelet_pod_start_duration_seconds) and
// first Ready (ReadyLatencies).
func (a *Agent) observeStartup(uid types.UID, st *v1.PodStatus) {
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	lat := a.latency[uid]
	if lat == nil || lat.added.IsZero() {
		return
	}
	if !lat.wasRunning && st.Phase == v1.PodRunning {
		lat.wasRunning = true
		a.metrics.PodStartDuration(now.Sub(lat.added))
	}
	if !lat.wasReady && podReady(st) {
		lat.ready, lat.wasReady = now.Sub(lat.added), true
	}
}

func podReady(st *v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// ReadyLatencies returns, for each pod that turned Ready, how long after
// the agent first saw the pod (its ADD) that happened.
func (a *Agent) ReadyLatencies() map[types.UID]time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[types.UID]time.Duration, len(a.latency))
	for uid, l := range a.latency {
		if l.wasReady {
			out[uid] = l.ready
		}
	}
	return out
}

func (a *Agent) runtimeName() string {
	if a.runtime != "" {
		return a.runtime
	}
	return "cri"
}

// SyncPod brings a pod to its spec: status first (from the runtime state the
// workers waited for), then the pod's directories, then the runtime.
func (a *Agent) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
	// The pod runs as the node allocated it: a resize not accepted (yet)
	// changes nothing.
	pod, _ = a.alloc.AllocatedPod(pod)
	// A starting pod holds a slot of the workers' start gate.
	t := podworkers.TicketFromContext(ctx)
	rs, err := a.cache.Get(pod.UID)
	if err != nil {
		return false, fmt.Errorf("runtime status of %s: %w", podDesc(pod), err)
	}
	st, err := a.generate(pod, rs, false, nil)
	if err != nil {
		return false, err
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return true, nil
	}
	if err := a.ensurePodCgroup(ctx, pod, &st); err != nil {
		return false, err
	}
	if err := a.makePodDirs(pod); err != nil {
		return false, err
	}
	// The volumes first, as upstream: the pod waits (its status says
	// ContainerCreating), other pods go on. WaitForMount records the
	// FailedMount event itself. A starting pod waits without its slot in
	// the start gate.
	if len(pod.Spec.Volumes) > 0 {
		t.Pause()
		err = a.vol.WaitForMount(ctx, pod)
		if rerr := t.Resume(ctx); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return false, fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	res := a.syncer.SyncPod(ctx, pod, rs)
	for _, s := range res.Steps {
		if s.Step == podsync.StepResizePodInPlace && s.Err != nil && a.alloc.ResizeFailed(pod, s.Message) {
			// The failure shows at once, not at the retry.
			if _, err := a.generate(pod, rs, false, nil); err != nil {
				a.log.Warn("Failed to record a resize failure in the pod's status", "pod", podDesc(pod), "err", err)
			}
		}
	}
	a.countStarts(res)
	a.refreshAfter(ctx, pod, res)
	return false, res.Err()
}

// starting says whether the pod has yet to be seen Running, and its
// admission order: its syncs go through the workers' start gate
// (podworkers.Options.Starting).
func (a *Agent) starting(uid types.UID) (uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	lat := a.latency[uid]
	if lat == nil || lat.wasRunning {
		return 0, false
	}
	return lat.seq, true
}

// SyncTerminatingPod stops the pod's containers within the grace period and
// records its final status. As upstream's, liveness and startup probing
// stop first, and readiness probing only once the containers are stopped:
// a container that stops serving during its grace period turns unready
// (the sync loop writes readiness results straight into the status, since
// this pod's worker is busy here until the kill ends).
func (a *Agent) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn podworkers.PodStatusFunc) error {
	a.prober.StopLivenessAndStartup(pod)
	rs, err := cri.GetPodStatus(ctx, a.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	grace := gracePeriodSeconds
	if err := a.syncer.KillPod(ctx, pod, rs, &grace).Err(); err != nil {
		return err
	}
	a.prober.RemovePod(pod)
	a.updateQOSCgroups()
	rs, err = cri.GetPodStatus(ctx, a.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	for _, c := range rs.Containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return fmt.Errorf("pod %s: container %s still running after the kill", podDesc(pod), cri.ContainerName(c))
		}
	}
	_, err = a.generate(pod, rs, true, statusFn)
	return err
}

// SyncTerminatingRuntimePod stops an orphan known only from the runtime,
// with a grace period of one second, as upstream does.
func (a *Agent) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	rs, err := cri.GetPodStatus(ctx, a.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	one := int64(1)
	return a.syncer.KillPod(ctx, pod, rs, &one).Err()
}

// SyncTerminatedPod releases what a terminated pod held (its volumes) and
// marks its status final.
func (a *Agent) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	// A terminated pod's volumes are torn down, as upstream, whether or
	// not its source still lists it.
	a.vol.RemovePod(pod.UID)
	if err := a.vol.WaitForUnmount(ctx, pod); err != nil {
		return fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	// Its cgroup goes once its containers are gone, as upstream's.
	if err := a.destroyPodCgroup(pod); err != nil {
		return err
	}
	a.status.TerminatePod(pod)
	return nil
}

// makePodDirs creates the pod's data directories, as upstream's
// makePodDataDirs: RootDir/pods/<uid>/{volumes,plugins,containers}.
func (a *Agent) makePodDirs(pod *v1.Pod) error {
	dir, err := a.podDir(pod.UID)
	if err != nil {
		return err
	}
	for _, sub := range []string{"volumes", "plugins", "containers"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return fmt.Errorf("pod %s: data directories: %w", podDesc(pod), err)
		}
	}
	return nil
}

// podDir returns RootDir/pods/<uid>, refusing a UID that is not a plain
// path element.
func (a *Agent) podDir(uid types.UID) (string, error) {
	s := string(uid)
	if s == "" || s == "." || s == ".." || filepath.Base(s) != s {
		return "", fmt.Errorf("pod UID %q cannot name a directory", s)
	}
	return filepath.Join(a.podsDir(), s), nil
}

// cleanupOrphanedPodDirs removes the directories of pods that are neither
// desired nor known to the workers, as upstream's housekeeping does, once
// the volume manager has torn down their volumes: a directory whose
// volumes/ or volume-subpaths/ (pinned subPaths, bind mounts into
// volumes) still holds anything is left for a later pass, as upstream's,
// so nothing mounted is ever removed through.
func (a *Agent) cleanupOrphanedPodDirs(want map[types.UID]struct{}) {
	entries, err := os.ReadDir(a.podsDir())
	if err != nil {
		a.log.Warn("Cannot list pod directories", "err", err)
		return
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if _, ok := want[uid]; ok || !e.IsDir() || a.workers.IsPodKnownToWorker(uid) {
			continue
		}
		dir, err := a.podDir(uid)
		if err != nil {
			continue
		}
		if vols, err := os.ReadDir(volume.PodVolumesDir(a.opts.RootDir, uid)); err == nil && len(vols) > 0 {
			a.log.Debug("Orphaned pod directory still has volumes; not removing it yet", "podUID", uid)
			continue
		}
		if pins, err := os.ReadDir(volume.PodSubPathsDir(a.opts.RootDir, uid)); err == nil && len(pins) > 0 {
			a.log.Debug("Orphaned pod directory still has volume subpaths; not removing it yet", "podUID", uid)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("Failed to remove an orphaned pod directory", "podUID", uid, "err", err)
		}
	}
}

func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// pullPausing is the runtime as the pod syncer sees it: a pull gives the
// starting pod's slot in the start gate back while the image downloads.
type pullPausing struct{ Runtime }

// PullImage implements cri.ImageService.
func (r pullPausing) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	t := podworkers.TicketFromContext(ctx)
	t.Pause()
	ref, err := r.Runtime.PullImage(ctx, image, auth, sandbox)
	if rerr := t.Resume(ctx); rerr != nil && err == nil {
		err = rerr
	}
	return ref, err
}
