package allocation

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// AdmitResize weighs pod's resize against the node's allocatable
// (Options.Node) and the other pods as allocated (Options.Pods), with the
// function AdmitResize. A static pod's resize is Infeasible before the
// node is read, and so is, with Options.PodLevelResizeDisabled, one that
// changes the pod's spec.resources, and those ExclusiveRefusal refuses; a node that cannot be read defers the resize with
// admission's MessageInvalidNodeInfo. It changes nothing.
func (m *Manager) AdmitResize(pod *v1.Pod) Decision {
	if d, ok := staticRefusal(pod); ok {
		return d
	}
	if m.podLevelOff {
		if allocated, ok := m.AllocatedPod(pod); ok && !podLevelEqual(pod.Spec.Resources, allocated.Spec.Resources) {
			return Decision{Outcome: Infeasible, Message: MessagePodLevelResizeDisabled}
		}
	}
	if m.cpuStatic || m.memStatic {
		if allocated, ok := m.AllocatedPod(pod); ok {
			if d, ok := ExclusiveRefusal(allocated, pod, m.cpuStatic, m.memStatic); ok {
				return d
			}
		}
	}
	alloc, err := m.node.Allocatable()
	if err != nil {
		m.log.Debug("Resize deferred: the node's allocatable is not known", "pod", podDesc(pod), "err", err)
		return Decision{Outcome: Defer, Message: admission.MessageInvalidNodeInfo}
	}
	others := m.pods.OtherPods(pod)
	allocated := make([]*v1.Pod, len(others))
	for i, p := range others {
		allocated[i], _ = m.AllocatedPod(p)
	}
	return AdmitResize(pod, alloc, allocated)
}

// ExclusiveRefusal is the decision on a resize under the static CPU
// manager (cpuStatic) or the Static memory manager (memStatic): Infeasible
// when pod is Guaranteed and one of its containers (init containers
// included) asks another CPU (MessageCPUManagerStatic) or memory
// (MessageMemoryManagerStatic) request than allocated holds, CPU first, as
// upstream weighs them; ok is false otherwise. It is pure.
func ExclusiveRefusal(allocated, pod *v1.Pod, cpuStatic, memStatic bool) (Decision, bool) {
	if podspec.QOSClass(pod) != v1.PodQOSGuaranteed {
		return Decision{}, false
	}
	if cpuStatic && requestChanged(allocated, pod, v1.ResourceCPU) {
		return Decision{Outcome: Infeasible, Message: MessageCPUManagerStatic}, true
	}
	if memStatic && requestChanged(allocated, pod, v1.ResourceMemory) {
		return Decision{Outcome: Infeasible, Message: MessageMemoryManagerStatic}, true
	}
	return Decision{}, false
}

// requestChanged reports whether a container of pod asks another request of
// r than it has in allocated.
func requestChanged(allocated, pod *v1.Pod, r v1.ResourceName) bool {
	was := map[string]resource.Quantity{}
	for _, c := range podspec.Containers(allocated) {
		was[c.Name] = c.Resources.Requests[r]
	}
	for _, c := range podspec.Containers(pod) {
		if q := c.Resources.Requests[r]; !q.Equal(was[c.Name]) {
			return true
		}
	}
	return false
}

// HandleResize decides on pod's resize, as upstream's allocation manager,
// when its spec (the pod as the API shows it) asks other resources than
// allocated. Admitted, the new resources are allocated (Flush writes
// them), PodResizePending goes, PodResizeInProgress comes with the pod's
// generation, and the event ResizeStarted is recorded: the runtime applies
// the resize at the pod's next sync (CheckResizeInProgress follows it).
// Deferred, the resize waits for RetryPendingResizes; Deferred or
// Infeasible, PodResizePending says so with upstream's message, and
// ResizeDeferred or ResizeInfeasible is recorded when that changes. A spec
// brought back to the allocation drops PodResizePending. It reports
// whether the pod's resize conditions changed: the pod's status is due.
func (m *Manager) HandleResize(pod *v1.Pod) bool {
	now := metav1.NewTime(m.clock.Now())
	if _, asked := m.AllocatedPod(pod); !asked {
		return m.setCondition(pod.UID, v1.PodResizePending, nil, now)
	}
	d := m.AdmitResize(pod)
	if d.Outcome == Admit {
		m.SetAllocated(pod)
		m.setCondition(pod.UID, v1.PodResizePending, nil, now)
		// Removed first: a new resize starts a new transition.
		m.setCondition(pod.UID, v1.PodResizeInProgress, nil, now)
		m.setCondition(pod.UID, v1.PodResizeInProgress, &v1.PodCondition{ObservedGeneration: pod.Generation}, now)
		m.eventf(pod, v1.EventTypeNormal, EventResizeStarted, eventMessage(pod, "Pod resize started", "", pod.Generation))
		return true
	}
	if d.Outcome == Defer {
		m.deferResize(pod.UID)
	}
	reason := d.Outcome.Reason()
	changed := m.setCondition(pod.UID, v1.PodResizePending,
		&v1.PodCondition{Reason: reason, Message: d.Message, ObservedGeneration: pod.Generation}, now)
	if changed {
		ev := EventResizeDeferred
		if d.Outcome == Infeasible {
			ev = EventResizeInfeasible
		}
		m.eventf(pod, v1.EventTypeWarning, ev, eventMessage(pod, "Pod resize "+reason, d.Message, pod.Generation))
	}
	return changed
}

// RetryPendingResizes takes the deferred resizes up again, upstream's
// order (those that ask no more CPU or memory first, then by priority,
// Guaranteed pods before the rest, the longest waiting first), each
// through HandleResize with the pod Options.Pods finds by its UID (a pod
// not found is dropped). It writes the checkpoint once, and returns the
// pods whose resize conditions changed, in that order: their status is
// due, the caller syncs them. The agent calls it when a pod leaves the
// node and every 3 minutes (90 housekeeping passes).
func (m *Manager) RetryPendingResizes() []*v1.Pod {
	m.mu.Lock()
	uids := m.deferred
	m.deferred = nil
	m.mu.Unlock()
	var cs []retryCandidate
	for _, uid := range uids {
		p, ok := m.pods.PodByUID(uid)
		if !ok {
			continue
		}
		allocated, asked := m.AllocatedPod(p)
		c := retryCandidate{pod: p, grows: asked && grows(p, allocated)}
		m.mu.Lock()
		if pc := m.conds[uid].get(v1.PodResizePending); pc != nil {
			c.since = pc.LastTransitionTime.Time
		}
		m.mu.Unlock()
		cs = append(cs, c)
	}
	retryOrder(cs)
	var changed []*v1.Pod
	for _, c := range cs {
		if m.HandleResize(c.pod) {
			changed = append(changed, c.pod)
		}
	}
	m.Flush()
	return changed
}

// CheckResizeInProgress keeps PodResizeInProgress in step with the
// runtime, as upstream's pod sync does: pod is the pod as allocated, rt
// what the runtime runs (nil: nothing known, nothing left to resize). The
// condition is set while a container the resize may change, or the pod's
// cgroup of a pod-level resize (PodActuation), is not actuated, and removed once every one is, with the event ResizeCompleted
// naming the generation the condition observed.
func (m *Manager) CheckResizeInProgress(pod *v1.Pod, rt Actuation) {
	now := metav1.NewTime(m.clock.Now())
	if inProgress(pod, rt) {
		m.mu.Lock()
		has := m.conds[pod.UID].get(v1.PodResizeInProgress) != nil
		m.mu.Unlock()
		if !has {
			m.setCondition(pod.UID, v1.PodResizeInProgress, &v1.PodCondition{ObservedGeneration: pod.Generation}, now)
		}
		return
	}
	var gen int64
	m.mu.Lock()
	if c := m.conds[pod.UID].get(v1.PodResizeInProgress); c != nil {
		gen = c.ObservedGeneration
	}
	m.mu.Unlock()
	if m.setCondition(pod.UID, v1.PodResizeInProgress, nil, now) {
		m.eventf(pod, v1.EventTypeNormal, EventResizeCompleted, eventMessage(pod, "Pod resize completed", "", gen))
	}
}

// inProgress says whether a container a resize may change, or the pod's
// own cgroup of a pod with pod-level resources (when rt answers
// PodActuation), is not actuated.
func inProgress(pod *v1.Pod, rt Actuation) bool {
	if rt == nil {
		return false
	}
	if pa, ok := rt.(PodActuation); ok && pod.Spec.Resources != nil && !pa.PodActuated(pod) {
		return true
	}
	in := false
	resizable(pod, func(c *v1.Container) {
		if !in && !rt.Actuated(c) {
			in = true
		}
	})
	return in
}

// ResizeFailed records a resize the runtime failed to apply, with its
// message: PodResizeInProgress with reason Error, and the event
// ResizeError when the condition changed. It reports whether it changed:
// the pod's status is due.
func (m *Manager) ResizeFailed(pod *v1.Pod, msg string) bool {
	now := metav1.NewTime(m.clock.Now())
	if !m.setCondition(pod.UID, v1.PodResizeInProgress,
		&v1.PodCondition{Reason: v1.PodReasonError, Message: msg, ObservedGeneration: pod.Generation}, now) {
		return false
	}
	m.eventf(pod, v1.EventTypeWarning, EventResizeError, eventMessage(pod, "Pod resize error", msg, pod.Generation))
	return true
}

// Conditions returns copies of the pod's resize conditions,
// PodResizePending first, for its status; none when no resize is
// pending or in progress.
func (m *Manager) Conditions(uid types.UID) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conds[uid].list()
}

// setCondition sets one of a pod's resize conditions (conditions.set).
func (m *Manager) setCondition(uid types.UID, t v1.PodConditionType, c *v1.PodCondition, now metav1.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.conds[uid]
	if cs == nil {
		if c == nil {
			return false
		}
		cs = &conditions{}
		m.conds[uid] = cs
	}
	return cs.set(t, c, now)
}

// deferResize queues a pod whose resize waits for room.
func (m *Manager) deferResize(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.deferred, uid) {
		m.deferred = append(m.deferred, uid)
	}
}

func (m *Manager) eventf(pod *v1.Pod, eventtype, reason, msg string) {
	if m.rec != nil {
		m.rec.Eventf(pod, eventtype, reason, "%s", msg)
	}
}

func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s/%s (%s)", pod.Namespace, pod.Name, pod.UID)
}
