package vkprovider_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/status"
)

// A Provider driven by hand, as VK's pod controller drives it: a pod
// created, its statuses heard through NotifyPods until it runs.
func Example() {
	dir, err := os.MkdirTemp("", "vkprovider")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// The agent's embedded fake runtime stands for containerd (cri.Dial).
	p, err := vkprovider.New(vkprovider.Options{Agent: agent.Options{
		NodeName: "vk-node",
		RootDir:  dir,
		Node:     agent.NodeOptions{HostIPs: []string{"192.0.2.10"}},
		Security: agent.SecurityOptions{NoMounts: true},
		Eviction: agent.EvictionOptions{Disabled: true},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	runningPods := make(chan *v1.Pod, 1)
	p.NotifyPods(ctx, func(pod *v1.Pod) { // VK writes pod.Status to the API server
		if pod.Status.Phase == v1.PodRunning {
			select {
			case runningPods <- pod:
			default:
			}
		}
	})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec:       v1.PodSpec{NodeName: "vk-node", Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}
	if err := p.CreatePod(ctx, pod); err != nil {
		fmt.Println(err)
	}
	select {
	case got := <-runningPods:
		fmt.Println(got.Namespace+"/"+got.Name, got.Status.Phase, got.Status.HostIP, got.Status.ContainerStatuses[0].Image)
	case <-time.After(30 * time.Second):
		fmt.Println("the pod did not run")
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output:
	// default/web Running 192.0.2.10 docker.io/library/nginx:1.27
}

// A virtual-kubelet node running the provider: VK registers the Node,
// renews its Lease and watches the pods bound to it; the agent runs them.
func ExampleNewProviderFunc() {
	var client kubernetes.Interface // the node's credentials, e.g. from clientcmd.BuildConfigFromFlags
	var p *vkprovider.Provider
	n, err := nodeutil.NewNode("vk-node",
		vkprovider.NewProviderFunc(vkprovider.Options{Client: client}, func(built *vkprovider.Provider) { p = built }),
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.SkipDownwardAPIResolution = true // the agent resolves environment variables as a kubelet
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Wait()
}

// backend is a provider's own way of running pods, here in memory: no
// CRI, no runtime, only what the sketch of the package doc needs.
type backend struct{}

// Ensure starts what the pod lacks and tells how it is.
func (backend) Ensure(_ context.Context, pod *v1.Pod) (v1.PodStatus, error) {
	st := v1.PodStatus{Phase: v1.PodRunning, HostIP: "192.0.2.10"}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image,
			ContainerID: "mine://" + string(pod.UID) + "-" + c.Name, Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	}
	return st, nil
}

// Stop stops the pod's containers within grace.
func (backend) Stop(context.Context, *v1.Pod, time.Duration) error { return nil }

// ExecSync runs a probe's command in a container.
func (backend) ExecSync(context.Context, string, []string, time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	return &runtimeapi.ExecSyncResponse{}, nil
}

// vkSink is where statuses go: VK's NotifyPods callback in a provider.
type vkSink struct {
	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	running chan string
}

func (s *vkSink) GetPod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[pod.UID]; ok {
		return p, nil
	}
	return pod, nil
}

func (s *vkSink) UpdatePodStatus(_ context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	p := pod.DeepCopy()
	p.Status = st
	s.mu.Lock()
	s.pods[pod.UID] = p
	s.mu.Unlock()
	if st.Phase == v1.PodRunning {
		select {
		case s.running <- p.Name + " " + string(st.Phase):
		default:
		}
	}
	return p, nil
}

func (s *vkSink) DeletePod(context.Context, *v1.Pod) error { return nil }

// Without a CRI-shaped backend, a provider can still take the pod
// workers, the prober and the status manager alone (the package doc's
// sketch).
func Example_withoutCRI() {
	var be backend
	sink := &vkSink{pods: map[types.UID]*v1.Pod{}, running: make(chan string, 1)}
	statuses, err := status.New(status.Options{Sink: sink})
	if err != nil {
		fmt.Println(err)
		return
	}
	probes, err := prober.New(prober.Options{Runner: prober.NewRunner(prober.RunnerOptions{Execer: be}), Status: statuses})
	if err != nil {
		fmt.Println(err)
		return
	}
	workers, err := podworkers.New(podworkers.Options{
		Syncer: podworkers.SyncerFuncs{
			SyncPodFunc: func(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
				st, err := be.Ensure(ctx, pod)
				if err != nil {
					return false, err
				}
				probes.UpdatePodStatus(pod, &st) // Ready and Started from the probes
				return st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed, statuses.Set(pod, st)
			},
			SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, grace int64, _ podworkers.PodStatusFunc) error {
				return be.Stop(ctx, pod, time.Duration(grace)*time.Second)
			},
			SyncTerminatedPodFunc: func(_ context.Context, pod *v1.Pod) error {
				statuses.TerminatePod(pod)
				return nil
			},
		},
		StatusWaiter: podworkers.StatusWaiterFunc(func(context.Context, types.UID, time.Time) error { return nil }),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{statuses.Run, probes.Run, workers.Run} {
		wg.Go(func() { _ = run(ctx) })
	}

	// VK's CreatePod:
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}
	probes.AddPod(pod)
	workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
	fmt.Println(<-sink.running)
	cancel()
	wg.Wait()
	// Output:
	// web Running
}
