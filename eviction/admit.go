package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// TaintNodeMemoryPressure is the taint a BestEffort pod must tolerate to be
// admitted under memory pressure.
const TaintNodeMemoryPressure = "node.kubernetes.io/memory-pressure"

// Admit is upstream's eviction admission handler. With no pressure every pod
// is admitted; critical pods always are. Under memory pressure alone a pod
// that is not BestEffort, or a BestEffort pod that tolerates the
// node.kubernetes.io/memory-pressure:NoSchedule taint, is admitted. Every
// other pod is rejected with reason Evicted and the message "The node had
// condition: [MemoryPressure]. ".
func (m *Manager) Admit(pod *v1.Pod) (admit bool, reason, message string) {
	conds := m.NodeConditions()
	admit, reason, message = Admit(conds, pod)
	if !admit {
		m.log.Warn("eviction manager: rejected pod", "pod", pod.Namespace+"/"+pod.Name, "conditions", conds)
	}
	return admit, reason, message
}

// Admit decides the admission of pod on a node with the given pressure
// conditions (a Decision's, or Manager.NodeConditions), with the rules of
// Manager.Admit.
func Admit(conditions []v1.NodeConditionType, pod *v1.Pod) (admit bool, reason, message string) {
	if len(conditions) == 0 || podspec.IsCritical(pod) {
		return true, "", ""
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if !isBestEffort(pod) || toleratesMemoryPressure(pod) {
			return true, "", ""
		}
	}
	return false, Reason, fmt.Sprintf("The node had condition: %v. ", conditions)
}

// isBestEffort reports whether pod's QoS class is BestEffort: its status
// says so, or (status not set) no container sets a CPU or memory request or
// limit.
func isBestEffort(pod *v1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == v1.PodQOSBestEffort
	}
	if r := pod.Spec.Resources; r != nil && hasCompute(r.Requests, r.Limits) {
		return false
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if hasCompute(cs[i].Resources.Requests, cs[i].Resources.Limits) {
				return false
			}
		}
	}
	return true
}

func hasCompute(lists ...v1.ResourceList) bool {
	for _, l := range lists {
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := l[r]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// toleratesMemoryPressure reports whether a toleration of pod matches the
// taint node.kubernetes.io/memory-pressure:NoSchedule (no value).
func toleratesMemoryPressure(pod *v1.Pod) bool {
	for _, t := range pod.Spec.Tolerations {
		if t.Effect != "" && t.Effect != v1.TaintEffectNoSchedule {
			continue
		}
		switch t.Operator {
		case v1.TolerationOpExists:
			if t.Key == "" || t.Key == TaintNodeMemoryPressure {
				return true
			}
		case v1.TolerationOpEqual, "":
			if t.Key == TaintNodeMemoryPressure && t.Value == "" {
				return true
			}
		}
	}
	return false
}
