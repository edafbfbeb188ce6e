package pleg_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/pleg"
)

// onePodRuntime is a runtime with one pod, "web", whose container the example
// stops. Any cri.RuntimeService (the CRI client, cri/fake) does instead.
type onePodRuntime struct {
	mu    sync.Mutex
	state runtimeapi.ContainerState
}

var labels = cri.ContainerLabels("uid-web", "web", "default", "nginx")

func (r *onePodRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return []*runtimeapi.PodSandbox{{
		Id:       "sandbox-1",
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-web", Name: "web", Namespace: "default"},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
	}}, nil
}

func (r *onePodRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return []*runtimeapi.Container{{Id: "nginx-1", PodSandboxId: "sandbox-1", State: r.state, Labels: labels}}, nil
}

func (r *onePodRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
		Id:       id,
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-web", Name: "web", Namespace: "default"},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.7"},
	}}, nil
}

func (r *onePodRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &runtimeapi.ContainerStatus{Id: id, State: r.state, Labels: labels}
	if r.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		st.ExitCode, st.Reason = 137, "OOMKilled"
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (r *onePodRuntime) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = runtimeapi.ContainerState_CONTAINER_EXITED
}

// A sync loop reads events and looks the pod up in the cache. The clock is a
// fake one that the example never moves, so the relist after the first is
// forced with Relist.
func Example() {
	rt := &onePodRuntime{state: runtimeapi.ContainerState_CONTAINER_RUNNING}
	clock := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: rt, Clock: clock})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	// The first relist runs at once: the pod's sandbox and container started.
	for range 2 {
		fmt.Println(<-p.Events())
	}
	status, _ := p.Cache().Get("uid-web")
	fmt.Println(status.Name, status.IPs, status.ContainerByName("nginx").GetState())

	// The container dies; the next relist reports it.
	rt.stop()
	if err := p.Relist(ctx); err != nil {
		panic(err)
	}
	ev := <-p.Events()
	fmt.Println(ev)
	status, _ = p.Cache().Get(ev.PodUID)
	c := status.ContainerByID(ev.ContainerID)
	fmt.Println(cri.ContainerName(c), c.GetExitCode(), c.GetReason())

	healthy, _ := p.Healthy()
	fmt.Println("healthy:", healthy)
	cancel()
	fmt.Println(<-done)
	// Output:
	// uid-web ContainerStarted nginx-1
	// uid-web ContainerStarted sandbox-1 (sandbox)
	// web [10.244.0.7] CONTAINER_RUNNING
	// uid-web ContainerDied nginx-1
	// nginx 137 OOMKilled
	// healthy: true
	// <nil>
}
