package dra_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

// A pod whose claim the scheduler allocated a GPU of the driver
// gpu.example.com, on a node where no DRA driver is registered: the pod
// may not run yet, and its sync says why with upstream's words.
func Example() {
	gpu := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
	gpu.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "pod-uid"}}
	gpu.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
	m, err := dra.New(dra.Options{Claims: dra.ClaimsFunc(func(_ context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
		return gpu, nil // an API server's client in a real node
	})})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default", UID: "pod-uid"},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}}}
	fmt.Println(m.PrepareResources(context.Background(), pod))
	// Output:
	// prepare dynamic resources: DRA driver gpu.example.com is not registered
}

// A DRA driver's kubelet plugin registers (package pluginmanager calls the
// Registry; here the test does), the pod's claim is prepared, its
// container gets the CDI device, and the claim is unprepared when the pod
// has stopped.
func Example_prepare() {
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	plugin, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: filepath.Join(dir, "gpu.sock")})
	if err != nil {
		panic(err)
	}
	defer plugin.Stop()
	plugin.SetDevices("gpu", &drav1.Device{PoolName: "node1", DeviceName: "gpu-0", CdiDeviceIds: []string{"gpu.example.com/gpu=0"}})

	gpu := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
	gpu.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "pod-uid"}}
	gpu.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
	m, err := dra.New(dra.Options{StateDir: dir, Claims: dra.ClaimsFunc(func(context.Context, string, string) (*resourcev1.ResourceClaim, error) {
		return gpu, nil
	})})
	if err != nil {
		panic(err)
	}
	defer m.Registry().Close()
	ctx := context.Background()
	if err := m.Registry().RegisterPlugin(ctx, plugin.Driver(), plugin.Endpoint(), plugin.Services()); err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default", UID: "pod-uid"},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}},
			Containers: []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}}}}
	fmt.Println(m.PrepareResources(ctx, pod))
	fmt.Println(m.CDIDevices(pod, &pod.Spec.Containers[0]))
	fmt.Println(m.UnprepareResources(ctx, pod))
	fmt.Println(plugin.Prepared())
	// Output:
	// <nil>
	// [gpu.example.com/gpu=0] <nil>
	// <nil>
	// []
}

// As the node starts, every ResourceSlice it has on the API server is
// deleted (driver ""): no DRA driver has registered yet. Later a driver
// left with no connected plugin for Options.WipingDelay has its own
// deleted the same way.
func ExampleRegistry_WipeAll() {
	m, err := dra.New(dra.Options{Slices: dra.ResourceSlicesFunc(func(_ context.Context, driver string) error {
		fmt.Printf("delete the node's ResourceSlices of driver %q\n", driver) // a DeleteCollection in a real node
		return nil
	})})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Registry().Close()
	fmt.Println(m.Registry().WipeAll(context.Background()))
	// Output:
	// delete the node's ResourceSlices of driver ""
	// <nil>
}
