package apiserver

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// withReportedTerminal returns pods, where each pod whose status is not in
// a terminal phase but for which reported holds a status in one (the node
// reported it before a restart, and the API server has not acknowledged it)
// is replaced by a copy with that status. A terminal phase is final, so a
// pod the node saw finish stays finished whatever older copy of it the API
// server or the local state holds: its worker stops what may remain of it
// instead of running it again, as upstream's pod workers do with a pod
// whose API status is terminal. pods and its pods are not modified (they
// belong to the reflector's store); the slice is pods itself when nothing
// changes.
func withReportedTerminal(pods []*v1.Pod, reported map[types.UID]*v1.PodStatus) []*v1.Pod {
	if len(reported) == 0 {
		return pods
	}
	var out []*v1.Pod
	for i, p := range pods {
		st, ok := reported[p.UID]
		if !ok || podspec.IsTerminal(p.Status.Phase) || !podspec.IsTerminal(st.Phase) {
			continue
		}
		if out == nil {
			out = append(make([]*v1.Pod, 0, len(pods)), pods...)
		}
		c := p.DeepCopy()
		c.Status = *st.DeepCopy()
		out[i] = c
	}
	if out == nil {
		return pods
	}
	return out
}
