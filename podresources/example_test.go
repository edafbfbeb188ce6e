package podresources_test

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/podresources"
)

// gpuHolder is a device manager that gave one GPU to one container.
type gpuHolder struct{}

func (gpuHolder) Devices(uid types.UID, container string) map[string][]string {
	if uid == "train-uid" && container == "main" {
		return map[string][]string{"example.com/gpu": {"gpu0"}}
	}
	return nil
}

func (gpuHolder) AllocatableDevices() map[string][]string {
	return map[string][]string{"example.com/gpu": {"gpu0", "gpu1"}}
}

// NUMANodes: gpu0 sits on NUMA node 0, gpu1 on node 1.
func (gpuHolder) NUMANodes(_, id string) []int {
	return map[string][]int{"gpu0": {0}, "gpu1": {1}}[id]
}

// activePods are fixed pods, all active.
type activePods []*v1.Pod

func (p activePods) ActivePods() []*v1.Pod { return p }
func (p activePods) Pods() []*v1.Pod       { return p }

// A monitoring agent asks the node which devices its pods hold, as it
// would ask a kubelet at /var/lib/kubelet/pod-resources/kubelet.sock.
func Example() {
	root, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(root)
	train := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "train-uid"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main"}}}}
	s, _ := podresources.New(podresources.Options{
		Dir:     root + "/" + podresources.DirName,
		Pods:    activePods{train},
		Sources: podresources.Sources{Devices: gpuHolder{}},
	})
	if err := s.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	conn, _ := grpc.NewClient("unix://"+s.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	client := api.NewPodResourcesListerClient(conn)
	list, _ := client.List(ctx, &api.ListPodResourcesRequest{})
	for _, p := range list.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				fmt.Printf("%s/%s %s: %s %v on NUMA node %d\n", p.GetNamespace(), p.GetName(), c.GetName(), d.GetResourceName(), d.GetDeviceIds(),
					d.GetTopology().GetNodes()[0].GetID())
			}
		}
	}
	_, err := client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "ml", PodName: "eval"})
	fmt.Println(err)
	alloc, _ := client.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	fmt.Println("allocatable devices:", len(alloc.GetDevices()), "CPUs:", len(alloc.GetCpuIds()))
	// Output:
	// ml/train main: example.com/gpu [gpu0] on NUMA node 0
	// rpc error: code = Unknown desc = pod eval in namespace ml not found
	// allocatable devices: 2 CPUs: 0
}
