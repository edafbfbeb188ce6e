package podsync_test

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// A container that exits 3 is restarted at once, then held in
// CrashLoopBackOff for 10s.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}, Rules: []fake.Rule{{
		Command:  []string{"sh", "-c", "exit 3"},
		Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 3},
	}}})
	defer rt.Close()
	logs, _ := os.MkdirTemp("", "podsync-example")
	defer os.RemoveAll(logs)
	s, _ := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Config: containerconfig.Options{LogRoot: logs}})

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "busybox:1", Command: []string{"sh", "-c", "exit 3"},
		}}},
	}
	ctx := context.Background()
	for range 3 {
		st, _ := cri.GetPodStatus(ctx, rt, pod.UID, pod.Name, pod.Namespace)
		res := s.SyncPod(ctx, pod, st)
		for _, step := range res.Steps {
			if step.Step == podsync.StepCreateSandbox {
				fmt.Println(step.Step, step.Err == nil)
				continue
			}
			if step.Err != nil {
				fmt.Println(step.Step, step.Target, step.Reason+":", step.Message)
			} else {
				fmt.Println(step.Step, step.Target, "ok")
			}
		}
	}
	w, _ := s.WaitingReason(pod.UID, "app")
	fmt.Println("waiting:", w.Reason)
	// Output:
	// CreatePodSandbox true
	// StartContainer app ok
	// StartContainer app ok
	// StartContainer app CrashLoopBackOff: back-off 10s restarting failed container=app pod=web_default(uid-1)
	// waiting: CrashLoopBackOff
}

// A container of a running pod died for the third time: its older dead
// instances go, the newest stays for the pod's status (lastState). Once the
// deleted pod has terminated, every dead container goes.
func ExampleDeadContainersToRemove() {
	dead := func(name, id string, created int64) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: id, CreatedAt: created, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Labels: map[string]string{cri.ContainerNameLabel: name}}
	}
	st := &cri.PodStatus{UID: "uid-1", Containers: []*runtimeapi.ContainerStatus{
		dead("app", "app-3", 3), dead("app", "app-2", 2), dead("app", "app-1", 1), dead("log", "log-1", 1),
	}}
	for _, c := range podsync.DeadContainersToRemove(st, "app-3", 1, false) {
		fmt.Println("running pod:", c.GetId())
	}
	for _, c := range podsync.DeadContainersToRemove(st, "app-3", 1, true) {
		fmt.Println("deleted pod:", c.GetId())
	}
	// Output:
	// running pod: app-2
	// running pod: app-1
	// deleted pod: app-3
	// deleted pod: app-2
	// deleted pod: app-1
	// deleted pod: log-1
}
