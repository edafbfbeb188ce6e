package dra_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/dra"
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
