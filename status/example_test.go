package status_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/statustest"
)

// Generate a pod's status from the runtime's view, then push it with a
// Manager to a fake sink.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
	runtime := &cri.PodStatus{
		UID: "uid-1", IPs: []string{"10.1.0.7"},
		Sandboxes: []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.0.7"}}},
		Containers: []*runtimeapi.ContainerStatus{{
			Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: now.UnixNano(),
			Image: &runtimeapi.ImageSpec{Image: "docker.io/library/nginx:1.27"}, ImageRef: "sha256:abc",
		}},
	}
	st, err := status.Generate(status.Input{Pod: pod, Runtime: runtime, RuntimeName: "containerd", Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Phase, st.PodIP, st.QOSClass, st.ContainerStatuses[0].ContainerID)
	for _, c := range st.Conditions {
		fmt.Println(c.Type, c.Status)
	}

	sink := &statustest.Sink{}
	sink.Add(pod)
	m, err := status.New(status.Options{Sink: sink})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	if err := m.Set(pod, st); err != nil {
		fmt.Println(err)
	}
	_ = sink.Wait(ctx, func(calls []statustest.Call) bool { return len(calls) == 2 })
	cancel()
	<-done
	for _, c := range sink.Calls() {
		fmt.Println(c)
	}
	// Output:
	// Running 10.1.0.7 BestEffort containerd://c1
	// PodReadyToStartContainers True
	// Initialized True
	// Ready True
	// ContainersReady True
	// PodScheduled True
	// Get default/web uid-1 -> ok
	// Update default/web uid-1 phase=Running -> ok
}
