package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWithReportedTerminal(t *testing.T) {
	pod := func(uid string, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Status: v1.PodStatus{Phase: phase}}
	}
	done := &v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "c",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}
	failed := &v1.PodStatus{Phase: v1.PodFailed, Reason: "DeadlineExceeded"}
	running := &v1.PodStatus{Phase: v1.PodRunning}
	tests := []struct {
		name     string
		pods     []*v1.Pod
		reported map[types.UID]*v1.PodStatus
		want     []v1.PodPhase
		same     bool // the slice returned is pods itself
	}{
		{name: "nothing reported", pods: []*v1.Pod{pod("a", v1.PodRunning)}, want: []v1.PodPhase{v1.PodRunning}, same: true},
		{name: "another pod's status", pods: []*v1.Pod{pod("a", v1.PodRunning)}, reported: map[types.UID]*v1.PodStatus{"b": done},
			want: []v1.PodPhase{v1.PodRunning}, same: true},
		{name: "a running status reported is no terminal one", pods: []*v1.Pod{pod("a", v1.PodPending)}, reported: map[types.UID]*v1.PodStatus{"a": running},
			want: []v1.PodPhase{v1.PodPending}, same: true},
		{name: "running, reported succeeded", pods: []*v1.Pod{pod("a", v1.PodRunning), pod("b", v1.PodRunning)}, reported: map[types.UID]*v1.PodStatus{"a": done},
			want: []v1.PodPhase{v1.PodSucceeded, v1.PodRunning}},
		{name: "never reported running, reported failed", pods: []*v1.Pod{pod("a", "")}, reported: map[types.UID]*v1.PodStatus{"a": failed},
			want: []v1.PodPhase{v1.PodFailed}},
		{name: "the API server's terminal phase stays", pods: []*v1.Pod{pod("a", v1.PodFailed)}, reported: map[types.UID]*v1.PodStatus{"a": done},
			want: []v1.PodPhase{v1.PodFailed}, same: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := make([]v1.PodPhase, len(tc.pods))
			for i, p := range tc.pods {
				before[i] = p.Status.Phase
			}
			got := withReportedTerminal(tc.pods, tc.reported)
			var phases []v1.PodPhase
			for _, p := range got {
				phases = append(phases, p.Status.Phase)
			}
			assert.Equal(t, tc.want, phases)
			assert.Equal(t, tc.same, len(got) > 0 && &got[0] == &tc.pods[0], "the same slice")
			for i, p := range tc.pods {
				assert.Equal(t, before[i], p.Status.Phase, "the pods given are not modified")
				if st := tc.reported[p.UID]; st != nil && got[i] != p {
					assert.Equal(t, *st, got[i].Status, "the reported status whole")
				}
			}
		})
	}
}
