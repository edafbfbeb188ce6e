package allocation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/allocation"
)

func TestAdmitResize(t *testing.T) {
	node := resources("cpu", "4", "memory", "8Gi", "pods", "110")
	pod := func(cpu, memory string, opts ...string) *v1.Pod {
		m := map[string]string{"cpu": cpu, "memory": memory}
		for _, o := range opts {
			m[o] = ""
		}
		return newPod(t, "p", m)
	}
	other := newPod(t, "other", map[string]string{"cpu": "2", "memory": "6Gi"})
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		allocatable v1.ResourceList
		others      []*v1.Pod
		want        allocation.Decision
	}{
		{name: "fits", pod: pod("2", "2Gi"), allocatable: node, others: []*v1.Pod{other},
			want: allocation.Decision{Outcome: allocation.Admit}},
		{name: "static pod, even when it fits", pod: pod("1", "1Gi", "static"), allocatable: node,
			want: allocation.Decision{Outcome: allocation.Infeasible, Message: allocation.MessageStaticPod}},
		{name: "cpu beyond allocatable", pod: pod("5", "1Gi"), allocatable: node,
			want: allocation.Decision{Outcome: allocation.Infeasible, Message: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"}},
		{name: "memory named before cpu", pod: pod("5", "9Gi"), allocatable: node,
			want: allocation.Decision{Outcome: allocation.Infeasible, Message: "Node didn't have enough capacity: memory, requested: 9663676416, capacity: 8589934592"}},
		{name: "beyond allocatable is Infeasible whatever the others", pod: pod("5", "1Gi"), allocatable: node, others: []*v1.Pod{other},
			want: allocation.Decision{Outcome: allocation.Infeasible, Message: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"}},
		{name: "no room beside the others", pod: pod("3", "1Gi"), allocatable: node, others: []*v1.Pod{other},
			want: allocation.Decision{Outcome: allocation.Defer, Message: "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"}},
		{name: "the fit's first shortage", pod: pod("3", "3Gi"), allocatable: node, others: []*v1.Pod{other},
			want: allocation.Decision{Outcome: allocation.Defer, Message: "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"}},
		{name: "no pods left", pod: pod("1", "1Gi"), allocatable: resources("cpu", "4", "memory", "8Gi", "pods", "1"), others: []*v1.Pod{other},
			want: allocation.Decision{Outcome: allocation.Defer, Message: "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			assert.Equal(t, tc.want, allocation.AdmitResize(tc.pod, tc.allocatable, tc.others))
			assert.Equal(t, before, tc.pod, "the pod is read, never written")
		})
	}
}

func TestDecisionStrings(t *testing.T) {
	for _, tc := range []struct {
		d            allocation.Decision
		want, reason string
	}{
		{allocation.Decision{Outcome: allocation.Admit}, "Admit", ""},
		{allocation.Decision{Outcome: allocation.Defer, Message: admission.MessageInvalidNodeInfo}, "Defer: Kubelet cannot get node info.", v1.PodReasonDeferred},
		{allocation.Decision{Outcome: allocation.Infeasible, Message: allocation.MessageStaticPod}, "Infeasible: " + allocation.MessageStaticPod, v1.PodReasonInfeasible},
		{allocation.Decision{Outcome: allocation.Outcome(7)}, "Outcome(7)", ""},
	} {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.d.String())
			assert.Equal(t, tc.reason, tc.d.Outcome.Reason())
		})
	}
}
