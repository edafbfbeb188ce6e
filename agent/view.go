package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// podView reads the node's pods as several parts must see them: the
// desired pods (the sync loop's PodSet), where their workers are, their
// statuses and whether admission refused them. Admission, allocation,
// eviction, shutdown, the QoS cgroups and the readers share it; it writes
// nothing.
type podView struct {
	pods    *syncloop.PodSet
	workers *podworkers.Workers
	status  *status.Manager
	records *podRecords
}

// active are the admitted pods whose termination has not begun, as
// upstream's GetActivePods.
func (v *podView) active() []*v1.Pod {
	pods := v.pods.GetPods()
	out := pods[:0]
	for _, p := range pods {
		if v.records.isRejected(p.UID) || v.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		if st, ok := v.status.GetPodStatus(p.UID); ok && podspec.IsTerminal(st.Phase) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// others are the pods admission weighs a new pod against: upstream's
// active pods (admitted) but pod itself.
func (v *podView) others(pod *v1.Pod) []*v1.Pod { return v.admitted(pod.UID) }

// admitted are upstream's active pods (GetActivePods) but the one with UID
// except: every desired pod but those refused, those whose worker has
// finished, and those in a terminal phase (in the configuration or as the
// agent reported it) unless they are still being stopped.
func (v *podView) admitted(except types.UID) []*v1.Pod {
	pods := v.pods.GetPods()
	out := pods[:0]
	for _, p := range pods {
		if (except != "" && p.UID == except) || v.records.isRejected(p.UID) || v.workers.IsPodKnownTerminated(p.UID) {
			continue
		}
		if v.isTerminal(p) && !v.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// isTerminal: the configuration or the agent's last status says the pod
// succeeded or failed.
func (v *podView) isTerminal(p *v1.Pod) bool {
	if podspec.IsTerminal(p.Status.Phase) {
		return true
	}
	st, ok := v.status.GetPodStatus(p.UID)
	return ok && podspec.IsTerminal(st.Phase)
}

// exists reports whether the agent still cares for a pod: it is desired or
// its worker has not finished.
func (v *podView) exists(uid types.UID) bool {
	_, ok := v.pods.GetPodByUID(uid)
	return ok || v.workers.IsPodKnownToWorker(uid)
}

// statuses returns the desired pods with their current statuses, sorted by
// namespace and name.
func (v *podView) statuses() []v1.Pod {
	pods := v.pods.GetPods()
	out := make([]v1.Pod, 0, len(pods))
	for _, p := range pods {
		cp := p.DeepCopy()
		if st, ok := v.status.GetPodStatus(p.UID); ok {
			cp.Status = st
		}
		if v.records.isRejected(p.UID) && cp.Status.Phase != v1.PodFailed {
			// The status manager refused the rejection's status: show it
			// all the same.
			cp.Status.Phase = v1.PodFailed
		}
		out = append(out, *cp)
	}
	sortPods(out)
	return out
}
