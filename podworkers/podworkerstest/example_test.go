package podworkerstest_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/podworkers/podworkerstest"
)

// The fake Syncer under real workers: every call is recorded, and Verify
// checks the order the workers promise.
func Example() {
	syncer := &podworkerstest.Syncer{}
	w, err := podworkers.New(podworkers.Options{Syncer: syncer, StatusWaiter: &podworkerstest.StatusWaiter{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web"}}
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	_ = w.WaitIdle(ctx)
	_ = w.KillPod(ctx, pod, podworkers.KillPodOptions{})
	_ = w.WaitIdle(ctx)
	cancel()
	<-done

	for _, c := range syncer.Calls() {
		fmt.Println(c)
	}
	fmt.Println("contract violations:", syncer.Verify())
	// Output:
	// SyncPod uid-1 type=create -> ok
	// SyncTerminatingPod uid-1 grace=1 -> ok
	// SyncTerminatedPod uid-1 -> ok
	// contract violations: <nil>
}
