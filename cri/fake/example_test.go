package fake_test

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// A container scripted to exit with code 3 ten seconds after it starts,
// driven by a fake clock: the exit happens inside Step.
func Example() {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.Options{
		Clock:  clock,
		Images: []string{"busybox:1.36"},
		Rules: []fake.Rule{{
			Image:    "busybox",
			Command:  []string{"sh", "-c", "sleep 10; exit 3"},
			Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 3, RunFor: 10 * time.Second},
		}},
	})
	defer rt.Close()

	sandboxConfig := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
	}
	sandboxID, err := rt.RunPodSandbox(ctx, sandboxConfig, "")
	if err != nil {
		panic(err)
	}
	id, err := rt.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		Command:  []string{"sh", "-c", "sleep 10; exit 3"},
	}, sandboxConfig)
	if err != nil {
		panic(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		panic(err)
	}

	show := func() {
		resp, err := rt.ContainerStatus(ctx, id, false)
		if err != nil {
			panic(err)
		}
		s := resp.Status
		if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			fmt.Println(s.State, "exit code", s.ExitCode, s.Reason, "after", time.Duration(s.FinishedAt-s.StartedAt))
			return
		}
		fmt.Println(s.State, "for", clock.Since(time.Unix(0, s.StartedAt)))
	}
	show()
	clock.Step(9 * time.Second)
	show()
	clock.Step(time.Second) // the exit happens inside Step
	show()
	// Output:
	// CONTAINER_RUNNING for 0s
	// CONTAINER_RUNNING for 9s
	// CONTAINER_EXITED exit code 3 Error after 10s
}
