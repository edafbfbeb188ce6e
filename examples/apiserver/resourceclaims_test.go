package apiserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// The claims come from the API server, and its NotFound is upstream's
// "fetch ResourceClaim" message.
func TestResourceClaims(t *testing.T) {
	gpu := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
	gpu.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web", UID: "pod-uid"}}
	gpu.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
	claims := apiserver.NewResourceClaims(fake.NewClientset(gpu))
	got, err := claims.ResourceClaim(context.Background(), "default", "gpu")
	require.NoError(t, err)
	assert.Equal(t, "gpu.example.com", got.Status.Allocation.Devices.Results[0].Driver)

	m, err := dra.New(dra.Options{Claims: claims})
	require.NoError(t, err)
	pod := func(claim string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "pod-uid"},
			Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "c", ResourceClaimName: ptr.To(claim)}}}}
	}
	assert.EqualError(t, m.PrepareResources(context.Background(), pod("gpu")),
		"prepare dynamic resources: DRA driver gpu.example.com is not registered")
	assert.EqualError(t, m.PrepareResources(context.Background(), pod("none")),
		`prepare dynamic resources: fetch ResourceClaim none: resourceclaims.resource.k8s.io "none" not found`)
}
