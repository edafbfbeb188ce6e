package podsync

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// KillReason says why a container is to be killed.
type KillReason uint8

const (
	// KillSpecChanged: the container's spec hash differs from the one it
	// was created with.
	KillSpecChanged KillReason = iota + 1
	// KillLivenessFailed: the liveness probe failed.
	KillLivenessFailed
	// KillStartupFailed: the startup probe failed.
	KillStartupFailed
	// KillNotInSpec: the pod spec has no container of that name.
	KillNotInSpec
	// KillUnknownState: the runtime reports the container's state as
	// unknown; it is killed so that it can be started cleanly.
	KillUnknownState
	// KillResizeRestart: the container's resources changed and its
	// resizePolicy asks for a restart to apply them.
	KillResizeRestart
)

// String returns a short name of the reason.
func (r KillReason) String() string {
	switch r {
	case KillSpecChanged:
		return "SpecChanged"
	case KillLivenessFailed:
		return "LivenessFailed"
	case KillStartupFailed:
		return "StartupFailed"
	case KillNotInSpec:
		return "NotInSpec"
	case KillUnknownState:
		return "UnknownState"
	case KillResizeRestart:
		return "ResizeRestart"
	}
	return fmt.Sprintf("KillReason(%d)", uint8(r))
}

// ContainerToKill is one running container the plan kills.
type ContainerToKill struct {
	// ID is the CRI container ID.
	ID string
	// Name is the container's name in the pod spec.
	Name string
	// Reason says why, Message says it for people (upstream's wording).
	Reason  KillReason
	Message string
}

// ContainerToReset is one instance of an init or app container that a
// reset (ComputeResetActions: the pod restarts all its containers in
// place) removes from the runtime, after killing it if it may run.
type ContainerToReset struct {
	// ID is the CRI container ID, Name the container's name in the spec.
	ID, Name string
	// Kill: the instance has not exited (running, created or in an
	// unknown state), so it is stopped first, without grace.
	Kill bool
	// Source: the instance exited with a code that one of its container's
	// RestartAllContainers rules matches; it caused the reset.
	Source bool
}

// Actions is the plan ComputeActions returns for one pod: what SyncPod does
// next. Indexes refer to pod.Spec.InitContainers and pod.Spec.Containers.
type Actions struct {
	// KillPod: stop every container and the sandbox. With CreateSandbox the
	// pod then starts afresh in a new sandbox; without it, the pod stays
	// down (every container is done, or a Never pod lost its sandbox).
	KillPod bool
	// CreateSandbox: create a new sandbox, with SandboxAttempt as its
	// attempt number. SandboxReason says why.
	CreateSandbox  bool
	SandboxAttempt uint32
	SandboxReason  string
	// SandboxID is the current sandbox, when it is kept.
	SandboxID string
	// ContainersToKill lists running containers to stop (only when KillPod
	// is false; KillPod stops everything).
	ContainersToKill []ContainerToKill
	// NextInitContainer is the index of the regular init container to start
	// next, or -1.
	NextInitContainer int
	// InitContainersToStart are indexes of init containers to start, in
	// order: restartable ones (sidecars) that are not running and, last,
	// NextInitContainer when it is set.
	InitContainersToStart []int
	// InitFailed: a regular init container failed and is not to be
	// restarted (podspec.RestartsAfterExit: restartPolicy Never, its own or
	// the pod's, and no rule restarting on its exit code), so the pod has
	// failed (KillPod is set as well).
	InitFailed bool
	// ContainersToStart are indexes of app containers to start, in order.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes of ephemeral containers
	// (pod.Spec.EphemeralContainers) never started yet, in a sandbox that
	// is kept. An ephemeral container runs once: it is never restarted.
	EphemeralContainersToStart []int
	// ContainersToUpdate are running containers (app containers, sidecars
	// and regular init containers) whose resources change in place.
	ContainersToUpdate []ContainerToUpdate
	// ContainersToReset are the instances a reset removes, in the order
	// it removes them (only ComputeResetActions sets it, and only when
	// KillPod is false: KillPod stops everything).
	ContainersToReset []ContainerToReset
}

// Nothing reports whether the plan does nothing.
func (a Actions) Nothing() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.ContainersToKill) == 0 &&
		len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 && len(a.EphemeralContainersToStart) == 0 &&
		len(a.ContainersToUpdate) == 0 && len(a.ContainersToReset) == 0
}

// ProbeResults tells whether a probe of one kind (liveness or startup) has
// most recently failed for the container with the given CRI ID. Unknown
// containers are not failed.
type ProbeResults interface {
	Failed(containerID string) bool
}

// ProbeResultsFunc adapts a function to ProbeResults.
type ProbeResultsFunc func(containerID string) bool

// Failed calls f.
func (f ProbeResultsFunc) Failed(containerID string) bool { return f(containerID) }

var _ ProbeResults = ProbeResultsFunc(nil)

// Probes carries the probe results ComputeActions consults; every field
// may be nil.
type Probes struct {
	// Liveness and Startup say whose probe failed (nil: nothing failed).
	Liveness, Startup ProbeResults
	// StartupSucceeded reports whether the startup probe of the container
	// with the given CRI ID has succeeded. A sidecar with a startup probe
	// holds back the init containers after it until then, as upstream's
	// do. Nil means every running sidecar counts as started.
	StartupSucceeded func(containerID string) bool
}

func running(st *runtimeapi.ContainerStatus) bool {
	return st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
}

func exited(st *runtimeapi.ContainerStatus) bool {
	return st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
}

func succeeded(st *runtimeapi.ContainerStatus) bool {
	return exited(st) && st.GetExitCode() == 0
}

// sandboxChange decides whether the pod needs a new sandbox.
func sandboxChange(pod *v1.Pod, status *cri.PodStatus) (create bool, attempt uint32, id, reason string) {
	if status == nil || len(status.Sandboxes) == 0 {
		return true, 0, "", "no sandbox"
	}
	newest := status.Sandboxes[0]
	attempt = newest.GetMetadata().GetAttempt() + 1
	ready := 0
	for _, sb := range status.Sandboxes {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	if ready > 1 {
		return true, attempt, newest.GetId(), "more than one sandbox is ready"
	}
	if newest.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return true, attempt, newest.GetId(), "sandbox is not ready"
	}
	want := runtimeapi.NamespaceMode_POD
	if pod.Spec.HostNetwork {
		want = runtimeapi.NamespaceMode_NODE
	}
	if newest.GetLinux().GetNamespaces().GetOptions().GetNetwork() != want {
		return true, attempt, newest.GetId(), "network namespace changed"
	}
	if !pod.Spec.HostNetwork && newest.GetNetwork().GetIp() == "" {
		return true, attempt, newest.GetId(), "sandbox has no IP"
	}
	return false, 0, newest.GetId(), ""
}

// ComputeActions compares the pod's spec with the runtime's view of it and
// returns what to do, as upstream's kuberuntime manager decides it. It is a
// pure function: it reads pod, status and probes and calls nothing else.
// When nothing is to be done it allocates nothing.
//
// Whether a container that exited is restarted is podspec.RestartsAfterExit
// (container restart rules: the container's restartPolicyRules on its exit
// code, then its own restartPolicy, then the pod's); after a failed probe it
// is podspec.RestartsAfterKill.
//
// The rules, in order:
//   - A new sandbox is needed when there is none, more than one is ready, the
//     newest is not ready, its network mode differs from the spec's
//     hostNetwork, or a pod network sandbox has no IP. Then the pod is killed
//     and restarted from its first init container (or its app containers,
//     skipping those that exited and are not to be restarted) — except that a
//     pod that runs once (podspec.RunsOnce: restartPolicy Never and no
//     container that may restart) whose containers already ran is only
//     killed.
//   - Init containers run one at a time in order; a regular one that exits 0
//     lets the next start, one that fails is restarted when
//     RestartsAfterExit says so, else fails the pod (KillPod and
//     InitFailed). Sidecars (restartable
//     init containers) are started in order and restarted whenever not
//     running; a running sidecar counts as started once its startup probe,
//     if it has one, succeeded. Once any app container exists, init is
//     done.
//   - App containers are started when never created or when their latest
//     instance exited and RestartsAfterExit says so: a Never pod restarts a
//     container whose own policy is Always, or whose rule matches its exit
//     code. A running container is killed when its spec hash changed (and
//     restarted), or its liveness or startup probe failed (restarted unless
//     RestartsAfterKill says no: the container's own policy, else the pod's,
//     is Never).
//   - A running app container, sidecar (once started) or regular init
//     container whose resources differ from its spec's (an in-place resize
//     the node accepted) is updated in place (ContainersToUpdate), or
//     restarted when its resizePolicy says RestartContainer for a resource
//     that changes (the API server allows that policy on no regular init
//     container); static pods are never resized, and a runtime that
//     reports no resources leaves nothing to compare, as upstream.
//   - Running containers with no spec entry are killed.
//   - When no app container is running or to be started, the pod is killed.
//
// A container whose exit a RestartAllContainers rule matches is restarted
// like any other (RestartsAfterExit says yes), as upstream's
// computePodActions does when the pod is not marked for a restart of all
// its containers; when its status says it is (the AllContainersRestarting
// condition), the plan is ComputeResetActions' instead.
func ComputeActions(pod *v1.Pod, status *cri.PodStatus, probes Probes) Actions {
	a := Actions{NextInitContainer: -1}
	create, attempt, id, reason := sandboxChange(pod, status)
	if create {
		a.KillPod = true
		if podspec.RunsOnce(pod) && attempt != 0 && len(status.Containers) != 0 {
			// A Never pod that ran is not started again.
			return a
		}
		var apps []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if st := status.ContainerByName(c.Name); exited(st) && !podspec.RestartsAfterExit(pod, c, st.GetExitCode()) {
				continue
			}
			apps = append(apps, i)
		}
		if len(apps) == 0 && initSucceeded(pod, status) {
			// Everything succeeded: the pod stays down.
			return a
		}
		a.CreateSandbox, a.SandboxAttempt, a.SandboxReason = true, attempt, reason
		if len(pod.Spec.InitContainers) != 0 {
			a.NextInitContainer = 0
			a.InitContainersToStart = []int{0}
			if podspec.IsSidecar(&pod.Spec.InitContainers[0]) {
				a.NextInitContainer = -1
			}
			return a
		}
		a.ContainersToStart = apps
		return a
	}
	a.SandboxID = id
	// Ephemeral containers start first, whatever the state of init, as
	// upstream's: a debug container helps most when init is stuck.
	for i := range pod.Spec.EphemeralContainers {
		if status.ContainerByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, i)
		}
	}

	// Is init done? Any app container existing means yes.
	appsExist := false
	for i := range pod.Spec.Containers {
		if status.ContainerByName(pod.Spec.Containers[i].Name) != nil {
			appsExist = true
			break
		}
	}
	if !appsExist && !a.walkInit(pod, status, probes) {
		if !a.KillPod {
			a.killNotInSpec(pod, status)
		}
		return a
	}
	if appsExist {
		// Init is done: keep sidecars running.
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if !podspec.IsSidecar(c) {
				continue
			}
			st := status.ContainerByName(c.Name)
			if !running(st) {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			} else if k, ok := sidecarChanged(c, st); ok {
				a.ContainersToKill = append(a.ContainersToKill, k)
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			} else if k, ok := probeKill(c, st, probes); ok {
				a.ContainersToKill = append(a.ContainersToKill, k)
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			} else {
				a.resizeAction(pod, c, st, i, true)
			}
		}
	}
	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := status.ContainerByName(c.Name)
		if st.GetState() == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillUnknownState,
				Message: fmt.Sprintf("Container %s is in an unknown state, will be restarted", c.Name)})
			a.ContainersToStart = append(a.ContainersToStart, i)
			continue
		}
		if !running(st) {
			if cri.ShouldStartContainer(pod, c, st) {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			continue
		}
		if h, ok, err := cri.HashFromAnnotations(st.GetAnnotations()); err == nil && ok && h != containerconfig.HashContainer(c) {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillSpecChanged,
				Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
			a.ContainersToStart = append(a.ContainersToStart, i)
			continue
		}
		if k, ok := probeKill(c, st, probes); ok {
			if !podspec.RestartsAfterKill(pod, c) {
				// Killed for good: say so, as upstream does.
				k.Message = strings.TrimSuffix(k.Message, ", will be restarted")
			} else {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			a.ContainersToKill = append(a.ContainersToKill, k)
			continue
		}
		if !a.resizeAction(pod, c, st, i, false) {
			continue
		}
		keep++
	}
	a.killNotInSpec(pod, status)
	if keep == 0 && len(a.ContainersToStart) == 0 {
		a.KillPod = true
		a.ContainersToKill = nil
		a.InitContainersToStart = nil
	}
	return a
}

// ComputeResetActions returns the plan for a pod whose status says all its
// containers are restarting in place (the AllContainersRestarting condition,
// which a container's exit matched by a RestartAllContainers rule sets):
// upstream's computePodActions with restartAllContainers. It is a pure
// function, as ComputeActions.
//
// Every instance the runtime holds of every init and app container is to
// be removed (ContainersToReset), after a kill without grace (at least
// MinimumGracePeriod, no preStop hook) when it has not exited, in
// upstream's order: the app containers that did not cause the reset, then
// the init containers that did not, then the app containers whose exit did
// (Source), then such init containers; each in spec order. Ephemeral
// containers and the sandbox stay. Nothing is started: once every instance
// is gone the pod's status no longer says AllContainersRestarting, and
// ComputeActions starts the pod over from its first init container in the
// same sandbox, with the restart counts taken on from the containers' log
// files. A pod whose sandbox needs replacing is killed and given a new
// sandbox, as ComputeActions would, and nothing else; the reset comes at
// the next sync.
func ComputeResetActions(pod *v1.Pod, status *cri.PodStatus) Actions {
	a := Actions{NextInitContainer: -1}
	create, attempt, id, reason := sandboxChange(pod, status)
	if create {
		a.KillPod, a.CreateSandbox, a.SandboxAttempt, a.SandboxReason = true, true, attempt, reason
		return a
	}
	a.SandboxID = id
	var sources []ContainerToReset
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			c := &list[i]
			for _, st := range status.ContainersByName(c.Name) {
				r := ContainerToReset{ID: st.GetId(), Name: c.Name}
				switch {
				case !exited(st):
					r.Kill = true
				case podspec.RestartsAllContainers(c, st.GetExitCode()):
					r.Source = true
					sources = append(sources, r)
					continue
				}
				a.ContainersToReset = append(a.ContainersToReset, r)
			}
		}
	}
	a.ContainersToReset = append(a.ContainersToReset, sources...)
	return a
}

// initSucceeded reports whether every regular init container's latest
// instance succeeded.
func initSucceeded(pod *v1.Pod, status *cri.PodStatus) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !podspec.IsSidecar(c) && !succeeded(status.ContainerByName(c.Name)) {
			return false
		}
	}
	return true
}

// walkInit plans the init containers of a pod none of whose app containers
// exists yet, and reports whether init is done.
func (a *Actions) walkInit(pod *v1.Pod, status *cri.PodStatus, probes Probes) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := status.ContainerByName(c.Name)
		if podspec.IsSidecar(c) {
			if !running(st) {
				// Later init containers wait until this sidecar runs.
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				return false
			}
			if k, ok := sidecarChanged(c, st); ok {
				a.ContainersToKill = append(a.ContainersToKill, k)
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				return false
			}
			if k, ok := probeKill(c, st, probes); ok {
				a.ContainersToKill = append(a.ContainersToKill, k)
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				return false
			}
			if c.StartupProbe != nil && probes.StartupSucceeded != nil && !probes.StartupSucceeded(st.GetId()) {
				// Later init containers wait until this sidecar has started.
				return false
			}
			if !a.resizeAction(pod, c, st, i, true) {
				// Restarted for its resize: later init containers wait.
				return false
			}
			continue
		}
		if succeeded(st) {
			continue
		}
		if running(st) {
			if k, ok := probeKill(c, st, probes); ok {
				a.ContainersToKill = append(a.ContainersToKill, k)
			} else {
				// Resized in place while it runs, as upstream's
				// InPlacePodVerticalScalingInitContainers (beta, on by
				// default since 1.36).
				a.resizeAction(pod, c, st, i, true)
			}
			return false
		}
		if exited(st) && !podspec.RestartsAfterExit(pod, c, st.GetExitCode()) {
			a.KillPod, a.InitFailed = true, true
			a.InitContainersToStart, a.ContainersToKill = nil, nil
			return false
		}
		a.NextInitContainer = i
		a.InitContainersToStart = append(a.InitContainersToStart, i)
		return false
	}
	return true
}

// sidecarChanged reports whether a running sidecar's spec changed since it
// was started (its image updated, say): it is then restarted, as upstream,
// with upstream's message.
func sidecarChanged(c *v1.Container, st *runtimeapi.ContainerStatus) (ContainerToKill, bool) {
	if h, ok, err := cri.HashFromAnnotations(st.GetAnnotations()); err == nil && ok && h != containerconfig.HashContainer(c) {
		return ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillSpecChanged,
			Message: fmt.Sprintf("Init container %s definition changed", c.Name)}, true
	}
	return ContainerToKill{}, false
}

// probeKill reports whether a running container must be killed for a failed
// liveness or startup probe.
func probeKill(c *v1.Container, st *runtimeapi.ContainerStatus, probes Probes) (ContainerToKill, bool) {
	if c.LivenessProbe != nil && probes.Liveness != nil && probes.Liveness.Failed(st.GetId()) {
		return ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillLivenessFailed,
			Message: fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.Name)}, true
	}
	if c.StartupProbe != nil && probes.Startup != nil && probes.Startup.Failed(st.GetId()) {
		return ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillStartupFailed,
			Message: fmt.Sprintf("Container %s failed startup probe, will be restarted", c.Name)}, true
	}
	return ContainerToKill{}, false
}

// killNotInSpec adds the running containers whose name is in neither list of
// the spec.
func (a *Actions) killNotInSpec(pod *v1.Pod, status *cri.PodStatus) {
	if status == nil {
		return
	}
	for _, st := range status.Containers {
		if !running(st) {
			continue
		}
		name := cri.ContainerName(st)
		if inSpec(pod, name) {
			continue
		}
		a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: st.GetId(), Name: name, Reason: KillNotInSpec,
			Message: fmt.Sprintf("Container %s is not in the pod spec, will be killed", name)})
	}
}

func inSpec(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	return false
}
