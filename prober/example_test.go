package prober_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/prober"
)

// ExampleManager registers a readiness probe, runs the manager and reads the
// readiness transitions the sync loop would select on.
func ExampleManager() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:           "app",
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
		}}},
	}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}},
	}}}
	m, err := prober.New(prober.Options{
		Runner: prober.ProbeRunnerFunc(func(context.Context, prober.Target) (prober.Outcome, error) {
			return prober.Outcome{Result: prober.Success}, nil
		}),
		Status: statusFunc(func(types.UID) (v1.PodStatus, bool) { return status, true }),
		Clock:  clk,
		Jitter: func(time.Duration) time.Duration { return 0 },
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	m.AddPod(pod)
	// The first probe of a container sends one update: its result. (The
	// initial Failure is only cached while the probe runs.)
	u := <-m.Readiness().Updates()
	fmt.Println(u.ContainerID, u.Result)
	st := *status.DeepCopy()
	m.UpdatePodStatus(pod, &st)
	fmt.Println("ready:", st.ContainerStatuses[0].Ready, "started:", *st.ContainerStatuses[0].Started)
	cancel()
	fmt.Println(<-done)
	// Output:
	// c1 Success
	// ready: true started: true
	// <nil>
}

type statusFunc func(types.UID) (v1.PodStatus, bool)

func (f statusFunc) GetPodStatus(uid types.UID) (v1.PodStatus, bool) { return f(uid) }
