package apiserver_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func benchStatus(containers int, running bool) v1.PodStatus {
	st := v1.PodStatus{
		Phase:  v1.PodPending,
		HostIP: "10.0.0.1",
		PodIP:  "10.244.0.7",
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue},
			{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady"},
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady"},
		},
	}
	for i := range containers {
		cs := v1.ContainerStatus{Name: fmt.Sprintf("c%d", i), Image: "busybox", ImageID: "sha256:abc", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
		if running {
			cs.Ready = true
			cs.ContainerID = fmt.Sprintf("containerd://%064d", i)
			cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if running {
		st.Phase = v1.PodRunning
		st.Conditions[2] = v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
		st.Conditions[3] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	}
	return st
}

// BenchmarkPodStatusPatch is the cost of computing one status patch, which
// UpdatePodStatus pays on every write.
func BenchmarkPodStatusPatch(b *testing.B) {
	for _, n := range []int{1, 10} {
		old, next := benchStatus(n, false), benchStatus(n, true)
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := apiserver.PodStatusPatch("u1", old, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlanMirrorPods is the mirror-pod decision for a node whose
// static pods all have current mirror pods but one.
func BenchmarkPlanMirrorPods(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		var static, mirrors []*v1.Pod
		for i := range n {
			h := fmt.Sprintf("h%d", i)
			static = append(static, staticPod("kube-system", fmt.Sprintf("p%d", i), h, "n1"))
			if i > 0 {
				mirrors = append(mirrors, mirrorPod("kube-system", fmt.Sprintf("p%d", i), h, "m", "n1"))
			}
		}
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p := apiserver.PlanMirrorPods(static, mirrors); len(p.Create) != 1 {
					b.Fatal(p)
				}
			}
		})
	}
}
