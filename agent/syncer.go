package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
	"github.com/kubeletkit/kubeletkit/volume"
)

// podSyncer is the pod workers' Syncer: it ties the runtime status, the
// status block, the prober and cri/podsync together, as upstream kubelet's
// SyncPod, SyncTerminatingPod and SyncTerminatedPod do, and is their
// StatusWaiter (waitFresh). It holds only the blocks a pod's sync uses.
type podSyncer struct {
	*podView // pods, workers, status, records
	rt       Runtime
	cache    *pleg.Cache
	pleg     lifecycle
	podsync  *podsync.Syncer
	alloc    *allocation.Manager
	prober   *prober.Manager
	vol      *volume.Manager
	cgroups  *podCgroups
	devices  *devices.Manager // nil without Node.DevicePluginDir
	dra      *dra.Manager     // the health of the claims' devices
	msgs     status.MessageReader
	metrics  Metrics
	events   EventRecorder
	clock    Clock
	log      *slog.Logger
	rootDir  string
	// hostIPs are reported in the pods' statuses (Cluster.ReportHostIPs).
	hostIPs []string
	// runtimeName is the runtime's name for container IDs, set by Run
	// before any pod syncs.
	runtimeName string
}

var _ podworkers.Syncer = (*podSyncer)(nil)

// generate builds the pod's status from the runtime's view and what the
// agent knows, and stores it in the status manager.
func (s *podSyncer) generate(pod *v1.Pod, rs *cri.PodStatus, terminal bool, edit podworkers.PodStatusFunc) (v1.PodStatus, error) {
	name := s.runtimeName
	if name == "" {
		name = "cri"
	}
	in := status.Input{Pod: pod, Runtime: rs, PodIsTerminal: terminal, RuntimeName: name,
		Probes: s.prober, Waiting: s.podsync, Messages: s.msgs, Now: s.clock.Now(), HostIPs: s.hostIPs}
	if pod.Status.Phase == v1.PodRunning {
		// Only a running pod's status reads its cgroup, as upstream's.
		in.PodCgroup = s.cgroups.resources(pod)
	}
	old, ok := s.status.GetPodStatus(pod.UID)
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
		s.alloc.CheckResizeInProgress(pod, actuation(pod, rs, s.cgroups.podActuated))
	}
	st.Conditions = append(st.Conditions, s.alloc.Conditions(pod.UID)...)
	if s.devices != nil {
		s.devices.UpdateAllocatedResourcesStatus(pod, &st)
	}
	s.dra.UpdateAllocatedResourcesStatus(pod, &st)
	if st.Reason == status.ReasonDeadlineExceeded && old.Reason != status.ReasonDeadlineExceeded {
		s.events.Eventf(pod, v1.EventTypeNormal, status.ReasonDeadlineExceeded, "%s", status.MessageDeadlineExceeded)
	}
	if edit != nil {
		edit(&st)
	}
	if err := s.status.Set(pod, st); err != nil && !errors.Is(err, status.ErrIllegalTransition) {
		return st, err
	}
	s.records.observeStartup(pod, &st)
	return st, nil
}

// SyncPod brings a pod to its spec: status first (from the runtime state the
// workers waited for), then the pod's directories, then the runtime.
func (s *podSyncer) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
	desired := pod
	// The pod runs as the node allocated it: a resize not accepted (yet)
	// changes nothing.
	pod, _ = s.alloc.AllocatedPod(pod)
	// A starting pod holds a slot of the workers' start gate.
	t := podworkers.TicketFromContext(ctx)
	rs, err := s.cache.Get(pod.UID)
	if err != nil {
		return false, fmt.Errorf("runtime status of %s: %w", podDesc(pod), err)
	}
	st, err := s.generate(pod, rs, false, nil)
	if err != nil {
		return false, err
	}
	if podspec.IsTerminal(st.Phase) {
		return true, nil
	}
	if err := s.cgroups.ensure(ctx, pod, &st); err != nil {
		return false, err
	}
	if err := s.makePodDirs(pod); err != nil {
		return false, err
	}
	// The volumes first, as upstream: the pod waits (its status says
	// ContainerCreating), other pods go on. WaitForMount records the
	// FailedMount event itself. A starting pod waits without its slot in
	// the start gate.
	if len(pod.Spec.Volumes) > 0 {
		t.Pause()
		err = s.vol.WaitForMount(ctx, pod)
		if rerr := t.Resume(ctx); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return false, fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	res := s.podsync.Sync(ctx, pod, rs, status.AllContainersRestarting(&st))
	if res.SyncAgain() {
		// The update carries the newest desired pod, so that it does not
		// undo one that came during this sync.
		if p, ok := s.pods.GetPodByUID(pod.UID); ok {
			desired = p
		}
		defer s.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: desired})
	}
	for _, step := range res.Steps {
		if step.Step == podsync.StepResizePodInPlace && step.Err != nil && s.alloc.ResizeFailed(pod, step.Message) {
			// The failure shows at once, not at the retry.
			if _, err := s.generate(pod, rs, false, nil); err != nil {
				s.log.Warn("Failed to record a resize failure in the pod's status", "pod", podDesc(pod), "err", err)
			}
		}
	}
	s.countStarts(res)
	s.refreshAfter(ctx, pod, res)
	return false, res.Err()
}

// SyncTerminatingPod stops the pod's containers within the grace period and
// records its final status. As upstream's, liveness and startup probing
// stop first, and readiness probing only once the containers are stopped:
// a container that stops serving during its grace period turns unready
// (the sync loop writes readiness results straight into the status, since
// this pod's worker is busy here until the kill ends).
func (s *podSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn podworkers.PodStatusFunc) error {
	s.prober.StopLivenessAndStartup(pod)
	rs, err := cri.GetPodStatus(ctx, s.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	grace := gracePeriodSeconds
	if err := s.podsync.KillPod(ctx, pod, rs, &grace).Err(); err != nil {
		return err
	}
	s.prober.RemovePod(pod)
	s.cgroups.updateQOS()
	rs, err = cri.GetPodStatus(ctx, s.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	for _, c := range rs.Containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return fmt.Errorf("pod %s: container %s still running after the kill", podDesc(pod), cri.ContainerName(c))
		}
	}
	// Its resource claims are released once nothing runs, before its
	// final status, as upstream's.
	if err := s.podsync.UnprepareResources(ctx, pod); err != nil {
		return err
	}
	_, err = s.generate(pod, rs, true, statusFn)
	return err
}

// SyncTerminatingRuntimePod stops an orphan known only from the runtime,
// with a grace period of one second, as upstream does.
func (s *podSyncer) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	rs, err := cri.GetPodStatus(ctx, s.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	one := int64(1)
	return s.podsync.KillPod(ctx, pod, rs, &one).Err()
}

// SyncTerminatedPod releases what a terminated pod held (its volumes) and
// marks its status final.
func (s *podSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	// A terminated pod's volumes are torn down, as upstream, whether or
	// not its source still lists it.
	s.vol.RemovePod(pod.UID)
	if err := s.vol.WaitForUnmount(ctx, pod); err != nil {
		return fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	// Its cgroup goes once its containers are gone, as upstream's.
	if err := s.cgroups.destroy(pod); err != nil {
		return err
	}
	s.status.TerminatePod(pod)
	return nil
}

// makePodDirs creates the pod's data directories, as upstream's
// makePodDataDirs: RootDir/pods/<uid>/{volumes,plugins,containers}.
func (s *podSyncer) makePodDirs(pod *v1.Pod) error {
	dir, err := podDir(s.rootDir, pod.UID)
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
func podDir(rootDir string, uid types.UID) (string, error) {
	s := string(uid)
	if s == "" || s == "." || s == ".." || filepath.Base(s) != s {
		return "", fmt.Errorf("pod UID %q cannot name a directory", s)
	}
	return filepath.Join(rootDir, "pods", s), nil
}

func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// pullPausing is the runtime as the pod syncer sees it: a pull waits for
// its turn among the node's pulls (slots, NodeOptions.MaxParallelImagePulls)
// and gives the starting pod's slot in the start gate back while it waits
// and while the image downloads.
type pullPausing struct {
	FullRuntime
	slots *cri.PullSlots
}

// PullImage implements cri.ImageService.
func (r pullPausing) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	t := podworkers.TicketFromContext(ctx)
	t.Pause()
	ref, err := r.pull(ctx, image, auth, sandbox)
	if rerr := t.Resume(ctx); rerr != nil && err == nil {
		err = rerr
	}
	return ref, err
}

func (r pullPausing) pull(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if err := r.slots.Acquire(ctx); err != nil {
		return "", err
	}
	defer r.slots.Release()
	return r.FullRuntime.PullImage(ctx, image, auth, sandbox)
}
