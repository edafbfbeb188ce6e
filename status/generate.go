package status

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// ErrInvalidInput is wrapped by the errors of Generate when its input cannot
// describe a pod (no pod, or a runtime view of another pod).
var ErrInvalidInput = errors.New("invalid input")

// ProbeResults fills the Ready and Started fields of a status's container and
// init container statuses from what the probes found. The prober's Manager
// implements it. Generate calls it after building the container statuses and
// before computing the conditions, as upstream does.
type ProbeResults interface {
	UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus)
}

// ProbeResultsFunc adapts a function to ProbeResults.
type ProbeResultsFunc func(pod *v1.Pod, status *v1.PodStatus)

// UpdatePodStatus calls f.
func (f ProbeResultsFunc) UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus) { f(pod, status) }

var _ ProbeResults = ProbeResultsFunc(nil)

// WaitingReasons says why the last attempt to start a container failed
// (CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError, ...): upstream's reason cache. cri/podsync's
// Syncer implements it.
type WaitingReasons interface {
	WaitingReason(uid types.UID, containerName string) (v1.ContainerStateWaiting, bool)
}

// WaitingReasonsFunc adapts a function to WaitingReasons.
type WaitingReasonsFunc func(uid types.UID, containerName string) (v1.ContainerStateWaiting, bool)

// WaitingReason calls f.
func (f WaitingReasonsFunc) WaitingReason(uid types.UID, containerName string) (v1.ContainerStateWaiting, bool) {
	return f(uid, containerName)
}

var _ WaitingReasons = WaitingReasonsFunc(nil)

// Input is everything Generate reads. Pod is required; every other field may
// be left zero.
type Input struct {
	// Pod is the pod as last received; Pod.Status is the status the API
	// server holds (its phase is never left once terminal, and the
	// conditions of other writers and the readiness gates' conditions are
	// read from it).
	Pod *v1.Pod
	// Runtime is the runtime's view of the pod (pleg's cache). Nil means the
	// runtime knows nothing of the pod.
	Runtime *cri.PodStatus
	// Old is the last status this node generated for the pod (the status
	// Manager's cached status). Nil means Pod.Status.
	Old *v1.PodStatus
	// PodIsTerminal says the pod worker has decided the pod is terminal
	// (it is terminating and its containers will not be restarted): a pod
	// whose containers all stopped then gets Succeeded or Failed whatever
	// its restart policy.
	PodIsTerminal bool
	// RuntimeName is the scheme of container IDs ("containerd" gives
	// "containerd://<id>"); CRI's Version reports it as RuntimeName. Empty
	// means "cri".
	RuntimeName string
	// HostIPs are the node's IPs, primary first: HostIP and HostIPs of the
	// status, and the pod IPs of a host-network pod. They also order the
	// pod IPs: the family of the node's primary IP first.
	HostIPs []string
	// Probes fills Ready and Started. Nil means no prober: a running
	// container without a startup probe is started, a started running
	// container without a readiness probe is ready, and an init container
	// that exited 0 is ready.
	Probes ProbeResults
	// Waiting gives the reasons of the last failed starts. Nil means none:
	// waiting containers get the default reasons (ContainerCreating,
	// PodInitializing) or none.
	Waiting WaitingReasons
	// Messages reads termination message files and log tails. Nil means
	// they are not read: a terminated container's message is the runtime's.
	Messages MessageReader
	// PodCgroup is what the pod's own cgroup runs with, in a pod's units
	// (package cgroups' Manager.PodResources: the CPU request from the
	// shares, the CPU limit from the quota, the memory limit; a value not
	// limited left out). A running pod's pod-level status.resources
	// report it, as upstream's. Nil means not read: the previous status's
	// values stand.
	PodCgroup *v1.ResourceRequirements
	// Now stamps conditions that change. Zero means time.Now().
	Now time.Time
}

// Generate returns the status of in.Pod as upstream kubelet reports it for
// the same situation: phase (Failed with reason DeadlineExceeded once the
// pod outlived its spec.activeDeadlineSeconds), container and init container statuses,
// conditions with their transition times, IPs, start time and QoS class.
// It is a pure function of its input (plus what in.Probes, in.Waiting and
// in.Messages return), safe to call concurrently, and never modifies its
// input. The result shares no memory with the input except strings.
func Generate(in Input) (v1.PodStatus, error) {
	pod := in.Pod
	if pod == nil {
		return v1.PodStatus{}, fmt.Errorf("generate pod status: %w: no pod", ErrInvalidInput)
	}
	if in.Runtime != nil && in.Runtime.UID != "" && in.Runtime.UID != pod.UID {
		return v1.PodStatus{}, fmt.Errorf("generate pod status %s: %w: runtime status is of pod %s", pod.UID, ErrInvalidInput, in.Runtime.UID)
	}
	old := in.Old
	if old == nil {
		old = &pod.Status
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	g := generator{in: in, pod: pod, old: old, rt: in.Runtime}
	// Is the pod restarting all its containers in place (a
	// RestartAllContainers rule matched an exit)? Then the containers the
	// runtime no longer holds are shown as removed for that restart.
	g.restartingAll = shouldAllContainersRestart(pod, in.Runtime, old)

	var s v1.PodStatus
	s.ObservedGeneration = pod.Generation
	s.QOSClass = podspec.QOSClass(pod)
	s.AllocatedResources, s.Resources = podResources(pod, in.PodCgroup, old)
	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = g.containerStatuses(pod.Spec.InitContainers, old.InitContainerStatuses, true, hasInit, false)
	s.ContainerStatuses = g.containerStatuses(pod.Spec.Containers, old.ContainerStatuses, false, hasInit, false)
	if n := len(pod.Spec.EphemeralContainers); n > 0 {
		ephemeral := make([]v1.Container, n)
		for i := range pod.Spec.EphemeralContainers {
			ephemeral[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
		s.EphemeralContainerStatuses = g.containerStatuses(ephemeral, old.EphemeralContainerStatuses, false, hasInit, true)
	}

	s.Phase = Phase(pod, s.InitContainerStatuses, s.ContainerStatuses, in.PodIsTerminal, hasActiveRegularContainer(pod, in.Runtime))
	if !podspec.IsTerminal(s.Phase) {
		switch {
		case podspec.IsTerminal(old.Phase):
			s.Phase = old.Phase
		case podspec.IsTerminal(pod.Status.Phase):
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	// A pod past its active deadline fails, as upstream's (whatever its
	// containers say; they are then killed).
	if PastActiveDeadline(pod, old.StartTime, now) {
		s.Phase, s.Reason, s.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	}
	// The API server's terminal phase is final.
	if podspec.IsTerminal(pod.Status.Phase) && s.Phase != pod.Status.Phase {
		s.Phase = pod.Status.Phase
	}

	// The IPs come before the probe results, as upstream's: a readiness
	// probe the prober triggers from this status connects to its pod IP.
	setIPs(pod, &s, in.Runtime, in.HostIPs)
	if len(s.PodIPs) == 0 && len(old.PodIPs) > 0 {
		// The sandbox is gone or stopped (a finished pod): the pod keeps
		// the last IPs it had, as upstream's.
		s.PodIP, s.PodIPs = old.PodIP, slices.Clone(old.PodIPs)
	}
	if in.Probes != nil {
		// The prober gets its own copy, so that s itself stays on the
		// stack when there is no prober.
		ps := new(v1.PodStatus)
		*ps = s
		in.Probes.UpdatePodStatus(pod, ps)
		s = *ps
	} else {
		defaultProbeResults(pod, &s)
	}

	s.Conditions = g.conditions(&s, now)
	s.StartTime = startTime(old, now)
	return s, nil
}

func startTime(old *v1.PodStatus, now time.Time) *metav1.Time {
	if old.StartTime != nil && !old.StartTime.IsZero() {
		t := *old.StartTime
		return &t
	}
	t := metav1.NewTime(now)
	return &t
}

type generator struct {
	in  Input
	pod *v1.Pod
	old *v1.PodStatus
	rt  *cri.PodStatus
	// restartingAll: the pod restarts all its containers in place
	// (upstream's podRestarting).
	restartingAll bool
}

// Default waiting reasons (upstream's).
const (
	// ReasonContainerCreating is the waiting reason of a container not yet
	// created in a pod without init containers.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPodInitializing is the waiting reason of a regular container
	// while the pod's init containers run.
	ReasonPodInitializing = "PodInitializing"
	// ReasonContainerStatusUnknown is the terminated reason of a container
	// that was running and can no longer be found.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
)

// Messages of containers that vanished (upstream's).
const (
	msgVanishedOnTerminate = "The container could not be located when the pod was terminated"
	msgVanishedOnDelete    = "The container could not be located when the pod was deleted.  The container used to be Running"
)

// containerStatuses converts the runtime's instances of the given containers
// into API statuses, with upstream's rules: a default waiting state, a
// terminated old status kept when the runtime lost the container, the newest
// instance as State and the one before as LastTerminationState, and the
// reason of a failed start for a container due to be restarted.
func (g *generator) containerStatuses(containers []v1.Container, previous []v1.ContainerStatus, isInit, hasInit, ephemeral bool) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}
	out := make([]v1.ContainerStatus, len(containers))
	// latest is each container's newest runtime instance, and seen counts
	// the instances used (at most 2); on the stack for usual pods.
	var latestBuf [64]*runtimeapi.ContainerStatus
	var seenBuf [64]uint8
	latest, seen := latestBuf[:0], seenBuf[:0]
	if len(containers) <= len(latestBuf) {
		latest, seen = latestBuf[:len(containers)], seenBuf[:len(containers)]
	} else {
		latest, seen = make([]*runtimeapi.ContainerStatus, len(containers)), make([]uint8, len(containers))
	}
	// idx is the spec index of each runtime instance (-1: not one of
	// these containers).
	var idxBuf [128]int
	var idx []int
	if g.rt != nil {
		idx = idxBuf[:0]
		if len(g.rt.Containers) > len(idxBuf) {
			idx = make([]int, 0, len(g.rt.Containers))
		}
		for j, cs := range g.rt.Containers {
			i := containerIndexAt(containers, cri.ContainerName(cs), j)
			idx = append(idx, i)
			if i >= 0 && latest[i] == nil {
				latest[i] = cs
			}
		}
	}
	for i := range containers {
		c := &containers[i]
		oldStatus := findStatusAt(previous, c.Name, i)
		switch {
		case oldStatus != nil && oldStatus.State.Terminated != nil:
			out[i] = *oldStatus.DeepCopy()
		case latest[i] != nil:
			// Replaced by the runtime's instance below.
			out[i] = v1.ContainerStatus{Name: c.Name, Image: c.Image}
		default:
			st := v1.ContainerStatus{Name: c.Name, Image: c.Image}
			st.State.Waiting = &v1.ContainerStateWaiting{Reason: defaultReason}
			if oldStatus != nil {
				st.RestartCount = oldStatus.RestartCount
				st.LastTerminationState = *oldStatus.LastTerminationState.DeepCopy()
			}
			out[i] = st
		}
	}

	// A container that was running and that the runtime no longer shows
	// was stopped behind our back: show it waiting to restart with an
	// unknown termination, not as never started. While the pod restarts
	// all its containers in place, a container removed for it (running
	// or terminated before) waits with a termination that says so.
	for i := range containers {
		c := &containers[i]
		if latest[i] != nil {
			continue
		}
		oldStatus := findStatusAt(previous, c.Name, i)
		if oldStatus != nil && g.restartingAll && oldStatus.State.Waiting == nil {
			out[i] = restartingAll(out[i], oldStatus)
			continue
		}
		if oldStatus == nil || oldStatus.State.Terminated != nil || oldStatus.State.Running == nil {
			continue
		}
		st := &out[i]
		if st.State.Waiting == nil || st.State.Waiting.Reason != defaultReason || st.LastTerminationState.Terminated != nil {
			continue
		}
		st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason:   ReasonContainerStatusUnknown,
			Message:  msgVanishedOnDelete,
			ExitCode: 137,
		}
		if g.pod.DeletionTimestamp == nil {
			st.RestartCount++
		}
	}

	if g.rt != nil {
		for j, cs := range g.rt.Containers {
			i := idx[j]
			if i < 0 || seen[i] >= 2 {
				continue
			}
			conv := g.convert(cs, findStatusAt(previous, containers[i].Name, i), &containers[i])
			if seen[i] == 0 {
				out[i] = conv
			} else {
				out[i].LastTerminationState = conv.State
			}
			seen[i]++
		}
	}

	// Containers due to be (re)started are waiting, with the reason their
	// last start failed when there is one.
	if g.in.Waiting != nil && !ephemeral {
		for i := range containers {
			c := &containers[i]
			if isInit && latest[i] != nil && latest[i].GetState() == runtimeapi.ContainerState_CONTAINER_EXITED && latest[i].GetExitCode() == 0 {
				continue
			}
			if !cri.ShouldStartContainer(g.pod, c, latest[i]) {
				continue
			}
			w, ok := g.in.Waiting.WaitingReason(g.pod.UID, c.Name)
			if !ok {
				continue
			}
			st := &out[i]
			if st.State.Terminated != nil {
				st.LastTerminationState = st.State
			}
			st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
	}

	// A container that can never run again stays terminated (unless the
	// pod restarts all its containers in place).
	for i := range containers {
		if g.restartingAll {
			break
		}
		oldStatus := findStatusAt(previous, containers[i].Name, i)
		if oldStatus == nil || oldStatus.State.Terminated == nil || out[i].State.Terminated != nil {
			continue
		}
		if podspec.RestartsAfterExit(g.pod, &containers[i], oldStatus.State.Terminated.ExitCode) {
			continue
		}
		prev := *oldStatus.DeepCopy()
		out[i] = prev
	}

	if !isInit {
		slices.SortFunc(out, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

// convert turns one runtime instance of a container into an API status.
func (g *generator) convert(cs *runtimeapi.ContainerStatus, old *v1.ContainerStatus, spec *v1.Container) v1.ContainerStatus {
	restarts, _ := cri.RestartCountFromAnnotations(cs.GetAnnotations())
	id := ContainerID(g.in.RuntimeName, cs.GetId())
	st := v1.ContainerStatus{
		Name:         spec.Name,
		RestartCount: int32(restarts),
		Image:        cs.GetImage().GetImage(),
		ImageID:      cs.GetImageRef(),
		ContainerID:  id,
	}
	if st.Image == "" {
		st.Image = spec.Image
	}
	st.User = containerUser(cs.GetUser())
	st.AllocatedResources = spec.Resources.Requests.DeepCopy()
	st.Resources = containerResources(spec, cs, old, id)
	if old != nil {
		st.VolumeMounts = slices.Clone(old.VolumeMounts)
		// As upstream 1.36 (RestartAllContainersOnContainerExits, on by
		// default), the restart count and the last termination carry
		// over from the previous status, so they outlive the garbage
		// collection of the instance before; the runtime's own previous
		// instance, when it still has one, takes precedence (see
		// containerStatuses).
		if old.RestartCount > st.RestartCount {
			st.RestartCount = old.RestartCount
		}
		switch {
		case old.ContainerID != id && old.State.Terminated != nil:
			st.LastTerminationState.Terminated = old.State.Terminated.DeepCopy()
		case old.LastTerminationState.Terminated != nil:
			st.LastTerminationState.Terminated = old.LastTerminationState.Terminated.DeepCopy()
		}
	}
	switch cs.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		st.State.Running = &v1.ContainerStateRunning{StartedAt: nanoTime(cs.GetStartedAt())}
		if old != nil && old.ContainerID == id && old.Started != nil {
			// The same container: it stays started across an agent
			// restart, as upstream's does across a kubelet restart
			// (ChangeContainerStatusOnKubeletRestart off). Upstream
			// carries it from any instance; a new one starts unstarted.
			started := *old.Started
			st.Started = &started
		}
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		st.State.Waiting = &v1.ContainerStateWaiting{}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		st.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    cs.GetExitCode(),
			Reason:      cs.GetReason(),
			Message:     g.terminatedMessage(cs),
			StartedAt:   nanoTime(cs.GetStartedAt()),
			FinishedAt:  nanoTime(cs.GetFinishedAt()),
			ContainerID: id,
		}
	default:
		if old != nil && old.State.Running != nil {
			reason := ReasonContainerStatusUnknown
			if g.restartingAll {
				reason = ReasonRestartingAllContainers
			}
			st.State.Terminated = &v1.ContainerStateTerminated{
				Reason:   reason,
				Message:  msgVanishedOnTerminate,
				ExitCode: 137,
			}
			st.RestartCount = old.RestartCount + 1
		} else {
			st.State.Waiting = &v1.ContainerStateWaiting{}
		}
	}
	return st
}

// ContainerID returns the API form of a container ID, "runtime://id"; an
// empty runtime name gives "cri://id".
func ContainerID(runtimeName, id string) string {
	if runtimeName == "" {
		runtimeName = "cri"
	}
	return runtimeName + "://" + id
}

func nanoTime(ns int64) metav1.Time {
	if ns == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, ns))
}

// findStatusAt is findStatus trying index hint first: statuses are usually
// in the same order as the spec's containers.
func findStatusAt(statuses []v1.ContainerStatus, name string, hint int) *v1.ContainerStatus {
	if hint < len(statuses) && statuses[hint].Name == name {
		return &statuses[hint]
	}
	return findStatus(statuses, name)
}

func findStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// containerIndexAt is containerIndex trying index hint first.
func containerIndexAt(containers []v1.Container, name string, hint int) int {
	if hint < len(containers) && containers[hint].Name == name {
		return hint
	}
	return containerIndex(containers, name)
}

func containerIndex(containers []v1.Container, name string) int {
	for i := range containers {
		if containers[i].Name == name {
			return i
		}
	}
	return -1
}

// hasActiveRegularContainer reports whether a regular container of the pod
// has an instance in the pod's current sandbox: upstream's
// HasAnyActiveRegularContainerStarted. CRI's container status does not name
// its sandbox, so an instance created at or after the newest sandbox counts
// as in it.
func hasActiveRegularContainer(pod *v1.Pod, rt *cri.PodStatus) bool {
	sb := rt.Sandbox()
	if sb == nil {
		return false
	}
	for _, cs := range rt.Containers {
		if cs.GetCreatedAt() < sb.GetCreatedAt() {
			continue
		}
		if containerIndex(pod.Spec.Containers, cri.ContainerName(cs)) >= 0 {
			return true
		}
	}
	return false
}

// defaultProbeResults fills Ready and Started as upstream's prober does for a
// pod without probes.
func defaultProbeResults(pod *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		c := specContainer(pod.Spec.Containers, cs.Name)
		started := cs.State.Running != nil && (c == nil || c.StartupProbe == nil)
		setStarted(cs, started)
		cs.Ready = started && (c == nil || c.ReadinessProbe == nil)
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		c := specContainer(pod.Spec.InitContainers, cs.Name)
		started := cs.State.Running != nil && (c == nil || c.StartupProbe == nil)
		setStarted(cs, started)
		if c != nil && podspec.IsSidecar(c) {
			cs.Ready = started && c.ReadinessProbe == nil
		} else {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
	}
}

func specContainer(cs []v1.Container, name string) *v1.Container {
	if i := containerIndex(cs, name); i >= 0 {
		return &cs[i]
	}
	return nil
}

// containerUser is the identity the runtime reports its container's first
// process runs with (a runtime that supports supplementalGroupsPolicy
// reports it), as upstream shows it in status.containerStatuses[].user;
// nil when the runtime reports none.
func containerUser(u *runtimeapi.ContainerUser) *v1.ContainerUser {
	if u == nil {
		return nil
	}
	out := &v1.ContainerUser{}
	if l := u.GetLinux(); l != nil {
		out.Linux = &v1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: slices.Clone(l.GetSupplementalGroups())}
	}
	return out
}

// setStarted sets cs.Started, in the bool it already points to when it
// has one (the status's own, carried by convert).
func setStarted(cs *v1.ContainerStatus, v bool) {
	if cs.Started == nil {
		cs.Started = new(bool)
	}
	*cs.Started = v
}
