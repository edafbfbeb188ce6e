package status

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Reasons of the conditions a node sets (upstream's).
const (
	// ReasonContainersNotReady: a container (or sidecar) is not ready or
	// has no status.
	ReasonContainersNotReady = "ContainersNotReady"
	// ReasonContainersNotInitialized: an init container has not succeeded
	// or a sidecar has not started.
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	// ReasonReadinessGatesNotReady: a readiness gate's condition is missing
	// or not True.
	ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"
	// ReasonPodCompleted: the pod succeeded.
	ReasonPodCompleted = "PodCompleted"
	// ReasonPodFailed: the pod failed.
	ReasonPodFailed = "PodFailed"
	// ReasonUnknownContainerStatuses: no container status is known.
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
)

// IsOwnedCondition reports whether the node owns conditions of type t
// (PodScheduled, Initialized, ContainersReady, Ready,
// PodReadyToStartContainers, AllContainersRestarting, and the resize
// conditions PodResizePending and PodResizeInProgress): Generate computes
// the first six and the agent the resize ones, and the status Manager
// never takes them from the API server. Conditions of other types belong
// to their writers and are kept.
func IsOwnedCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers,
		v1.AllContainersRestarting, v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// conditions returns the status's conditions: those of other writers from
// the API status, DisruptionTarget from the last status, then the node's own,
// each with a transition time that moves only when its status changes.
// AllContainersRestarting comes last, in a pod that has a
// RestartAllContainers rule, without an observedGeneration, as upstream's.
func (g *generator) conditions(s *v1.PodStatus, now time.Time) []v1.PodCondition {
	pod := g.pod
	conds := make([]v1.PodCondition, 0, len(pod.Status.Conditions)+6)
	for _, c := range pod.Status.Conditions {
		if !IsOwnedCondition(c.Type) {
			conds = append(conds, *c.DeepCopy())
		}
	}
	if c := findCondition(g.old.Conditions, v1.DisruptionTarget); c != nil {
		conds = replaceOrAppend(conds, *c.DeepCopy())
	}
	gen := pod.Generation
	ready := ContainersReadyCondition(pod, s.InitContainerStatuses, s.ContainerStatuses, s.Phase)
	initialized := InitializedCondition(pod, s.InitContainerStatuses, s.ContainerStatuses, s.Phase)
	if initialized.Reason == ReasonContainersNotInitialized {
		// Once initialized, a pod stays so while its init containers run
		// again (a restart of all its containers in place), as upstream's
		// with RestartAllContainersOnContainerExits.
		if o := findCondition(g.old.Conditions, v1.PodInitialized); o != nil && o.Status == v1.ConditionTrue {
			initialized = v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
		}
	}
	conds = append(conds,
		ReadyToStartContainersCondition(pod, g.rt),
		initialized,
		readyFrom(pod, ready, conds),
		ready,
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	)
	t := metav1.NewTime(now)
	for i := len(conds) - 5; i < len(conds); i++ {
		conds[i].ObservedGeneration = gen
		SetTransitionTime(&conds[i], g.old.Conditions, t)
	}
	if podspec.AllContainersCouldRestart(pod) {
		c := AllContainersRestartingCondition(pod, g.rt, g.old, s.Phase)
		SetTransitionTime(&c, g.old.Conditions, t)
		conds = append(conds, c)
	}
	return conds
}

// SetTransitionTime sets c's LastTransitionTime: the old condition's time
// when old has a condition of c's type with the same status, now otherwise.
func SetTransitionTime(c *v1.PodCondition, old []v1.PodCondition, now metav1.Time) {
	if o := findCondition(old, c.Type); o != nil && o.Status == c.Status {
		c.LastTransitionTime = o.LastTransitionTime
		return
	}
	c.LastTransitionTime = now
}

func findCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func replaceOrAppend(conds []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	if o := findCondition(conds, c.Type); o != nil {
		*o = c
		return conds
	}
	return append(conds, c)
}

// ReadyToStartContainersCondition is True when the pod has a sandbox that
// needs no replacing: exactly one ready sandbox, the newest, in the network
// namespace the pod asks for and with an IP unless on the host network.
func ReadyToStartContainersCondition(pod *v1.Pod, rt *cri.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if !sandboxNeeded(pod, rt) {
		c.Status = v1.ConditionTrue
	}
	return c
}

// sandboxNeeded is upstream's PodSandboxChanged: whether the next sync must
// create a new sandbox.
func sandboxNeeded(pod *v1.Pod, rt *cri.PodStatus) bool {
	if rt == nil || len(rt.Sandboxes) == 0 {
		return true
	}
	ready := 0
	for _, sb := range rt.Sandboxes {
		if sb.GetState() == runtimeapiReady {
			ready++
		}
	}
	sb := rt.Sandboxes[0]
	if ready > 1 || sb.GetState() != runtimeapiReady {
		return true
	}
	want := runtimeapiPodNetwork
	if pod.Spec.HostNetwork {
		want = runtimeapiNodeNetwork
	}
	if sb.GetLinux().GetNamespaces().GetOptions().GetNetwork() != want {
		return true
	}
	return !pod.Spec.HostNetwork && sb.GetNetwork() != nil && sb.GetNetwork().GetIp() == ""
}

// InitializedCondition is True when every regular init container succeeded
// and every sidecar started, or once a regular container has run; in a
// Succeeded pod (with or without init containers) its reason is
// PodCompleted, as upstream's.
func InitializedCondition(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	spec := &pod.Spec
	c := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	if len(spec.InitContainers) == 0 {
		if phase == v1.PodSucceeded {
			c.Reason = ReasonPodCompleted
		}
		return c
	}
	if initStatuses == nil && statuses == nil {
		c.Status, c.Reason = v1.ConditionFalse, ReasonUnknownContainerStatuses
		return c
	}
	var unknown, incomplete []string
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		st := findStatus(initStatuses, ic.Name)
		if st == nil {
			unknown = append(unknown, ic.Name)
			continue
		}
		if podspec.IsSidecar(ic) {
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, ic.Name)
			}
			continue
		}
		if !st.Ready {
			incomplete = append(incomplete, ic.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		c.Reason = ReasonPodCompleted
		return c
	}
	if anyRegularContainerStarted(spec, statuses) {
		return c
	}
	if msg := listMessage("containers with unknown status", unknown, "containers with incomplete status", incomplete); msg != "" {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonContainersNotInitialized, msg
	}
	return c
}

func anyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for i := range statuses {
		if containerIndex(spec.Containers, statuses[i].Name) < 0 {
			continue
		}
		if statuses[i].State.Running != nil || statuses[i].State.Terminated != nil {
			return true
		}
	}
	return false
}

// ContainersReadyCondition is True when every container and every sidecar
// is ready; in a terminal phase it is False with PodCompleted or PodFailed.
func ContainersReadyCondition(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	spec := &pod.Spec
	c := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
	if initStatuses == nil && statuses == nil {
		c.Status, c.Reason = v1.ConditionFalse, ReasonUnknownContainerStatuses
		return c
	}
	var unknown, unready []string
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		if !podspec.IsSidecar(ic) {
			continue
		}
		if st := findStatus(initStatuses, ic.Name); st == nil {
			unknown = append(unknown, ic.Name)
		} else if !st.Ready {
			unready = append(unready, ic.Name)
		}
	}
	for i := range spec.Containers {
		name := spec.Containers[i].Name
		if st := findStatus(statuses, name); st == nil {
			unknown = append(unknown, name)
		} else if !st.Ready {
			unready = append(unready, name)
		}
	}
	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalCondition(v1.ContainersReady, phase)
	}
	if msg := listMessage("containers with unknown status", unknown, "containers with unready status", unready); msg != "" {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonContainersNotReady, msg
	}
	return c
}

// ReadyCondition is ContainersReady when that is not True; otherwise True
// when every readiness gate's condition (read from conds) is True, False with
// ReadinessGatesNotReady when not.
func ReadyCondition(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, phase v1.PodPhase, conds []v1.PodCondition) v1.PodCondition {
	return readyFrom(pod, ContainersReadyCondition(pod, initStatuses, statuses, phase), conds)
}

// NeedsReadinessReconcile reports whether the Ready condition in the pod's
// status disagrees, in status or message, with what its readiness gates'
// conditions (set by other writers through the API) now make it: the node
// must then sync the pod to report it anew, as upstream's kubelet does when
// a gate's condition changes. A pod without readiness gates, or without a
// Ready condition yet, never needs it.
func NeedsReadinessReconcile(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := findCondition(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	want := ReadyCondition(pod, pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.Phase, pod.Status.Conditions)
	return cur.Status != want.Status || cur.Message != want.Message
}

func readyFrom(pod *v1.Pod, containersReady v1.PodCondition, conds []v1.PodCondition) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReady, Status: containersReady.Status, Reason: containersReady.Reason, Message: containersReady.Message}
	if c.Status != v1.ConditionTrue {
		return c
	}
	var msgs []string
	for _, rg := range pod.Spec.ReadinessGates {
		gc := findCondition(conds, rg.ConditionType)
		switch {
		case gc == nil:
			msgs = append(msgs, "corresponding condition of pod readiness gate \""+string(rg.ConditionType)+"\" does not exist.")
		case gc.Status != v1.ConditionTrue:
			msgs = append(msgs, "the status of pod readiness gate \""+string(rg.ConditionType)+"\" is not \"True\", but "+string(gc.Status))
		}
	}
	if len(msgs) > 0 {
		c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonReadinessGatesNotReady, strings.Join(msgs, ", ")
	}
	return c
}

func terminalCondition(t v1.PodConditionType, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodFailed:
		c.Reason = ReasonPodFailed
	case v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	}
	return c
}

// listMessage renders upstream's "containers with unknown status: [a b],
// containers with unready status: [c]".
func listMessage(label1 string, names1 []string, label2 string, names2 []string) string {
	var b strings.Builder
	if len(names1) > 0 {
		b.WriteString(label1 + ": [" + strings.Join(names1, " ") + "]")
	}
	if len(names2) > 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(label2 + ": [" + strings.Join(names2, " ") + "]")
	}
	return b.String()
}
