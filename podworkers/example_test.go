package podworkers_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podworkers"
)

// A pod is created, synced, evicted with a 5s grace period, and cleaned up.
func Example() {
	syncer := podworkers.SyncerFuncs{
		SyncPodFunc: func(ctx context.Context, t podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
			fmt.Println("SyncPod", pod.Name, t)
			return false, nil
		},
		SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, grace int64, statusFn podworkers.PodStatusFunc) error {
			var status v1.PodStatus
			statusFn(&status)
			fmt.Println("SyncTerminatingPod", pod.Name, "grace", grace, "reason", status.Reason)
			return nil
		},
		SyncTerminatedPodFunc: func(ctx context.Context, pod *v1.Pod) error {
			fmt.Println("SyncTerminatedPod", pod.Name)
			return nil
		},
	}
	// No pleg cache here: syncs do not wait for a newer runtime status.
	waiter := podworkers.StatusWaiterFunc(func(context.Context, types.UID, time.Time) error { return nil })
	w, err := podworkers.New(podworkers.Options{Syncer: syncer, StatusWaiter: waiter})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	grace, override := int64(30), int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "default"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	_ = w.WaitIdle(ctx)

	err = w.KillPod(ctx, pod, podworkers.KillPodOptions{
		Evict:                                    true,
		PodStatusFunc:                            func(s *v1.PodStatus) { s.Reason = "Evicted" },
		PodTerminationGracePeriodSecondsOverride: &override,
	})
	running := w.CouldHaveRunningContainers(pod.UID)
	_ = w.WaitIdle(ctx) // SyncTerminatedPod runs after KillPod returns
	fmt.Println("killed:", err == nil, "running:", running, "finished:", w.ShouldPodBeFinished(pod.UID))

	cancel()
	<-done
	// Output:
	// SyncPod web create
	// SyncTerminatingPod web grace 5 reason Evicted
	// SyncTerminatedPod web
	// killed: true running: false finished: true
}

// The Machine driven by hand: one pod runs to completion, one step at a time.
func ExampleMachine() {
	m, err := podworkers.NewMachine(podworkers.MachineOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "job", Namespace: "default"}}
	if _, err := m.Update(now, podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod}); err != nil {
		fmt.Println(err)
		return
	}
	for _, uid := range m.Ready() {
		for {
			work, ok := m.Next(now, uid)
			if !ok {
				fmt.Println("worker ends")
				break
			}
			fmt.Println(work.Kind, work.Pod.Name)
			// The job's containers exit: SyncPod reports the pod terminal.
			res := podworkers.Result{Terminal: work.Kind == podworkers.WorkSync}
			if err := m.Complete(now, uid, res); err != nil {
				fmt.Println(err)
				return
			}
			st, _ := m.State(uid)
			fmt.Println("  now", st)
		}
	}
	// Output:
	// SyncPod job
	//   now terminating
	// SyncTerminatingPod job
	//   now terminated
	// SyncTerminatedPod job
	//   now finished
	// worker ends
}
