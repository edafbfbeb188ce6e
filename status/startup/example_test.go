package startup_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/status/startup"
)

// A pod created at 0s pulls its image from 1s to 4s and has its container
// running at 10s: it took 10s to start, 7s of which count for the SLI.
func Example() {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-web", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}

	t := startup.New()
	t.Add(pod)
	t.PullStarted(pod.UID, created.Add(time.Second))
	t.PullFinished(pod.UID, created.Add(4*time.Second))
	st := &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(created.Add(9 * time.Second))}}}}}
	if o, ok := t.Observe(pod, st, created.Add(10*time.Second)); ok {
		fmt.Println("total", o.Total, "SLI", o.SLI, "counts", o.CountsForSLI)
	}
	_, again := t.Observe(pod, st, created.Add(11*time.Second))
	fmt.Println("again", again)
	// Output:
	// total 10s SLI 7s counts true
	// again false
}
