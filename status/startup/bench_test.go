package startup_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/status/startup"
)

// BenchmarkObserveNotStarted is the tracker's cost on each status of a
// pod that has not started yet, the hot path while a node starts pods.
func BenchmarkObserveNotStarted(b *testing.B) {
	t := startup.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("u1"), CreationTimestamp: metav1.NewTime(now)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	t.Add(p)
	st := &v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := t.Observe(p, st, now); ok {
			b.Fatal("a pod not started was observed as started")
		}
	}
}
