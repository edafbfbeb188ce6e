package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The resource claims' statuses are not the node's: a push keeps what the
// API server holds (the resourceclaim controller's resourceClaimStatuses,
// the scheduler's extendedResourceClaimStatus), whatever the node's status
// says, as upstream's mergePodStatus.
func TestMergeKeepsResourceClaimStatuses(t *testing.T) {
	api := v1.PodStatus{
		Phase:                                v1.PodPending,
		ResourceClaimStatuses:                []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("web-gpu-x7k2")}},
		ExtendedResourceClaimStatus:          &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "web-extended-resources-abcd"},
		NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "web-node"}},
	}
	next := v1.PodStatus{Phase: v1.PodPending}
	got := merge(api, next, false, metav1.NewTime(t0))
	assert.Equal(t, api.ResourceClaimStatuses, got.ResourceClaimStatuses)
	assert.Equal(t, api.ExtendedResourceClaimStatus, got.ExtendedResourceClaimStatus)
	assert.Equal(t, api.NodeAllocatableResourceClaimStatuses, got.NodeAllocatableResourceClaimStatuses)

	next.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu"}}
	assert.Nil(t, merge(v1.PodStatus{}, next, false, metav1.NewTime(t0)).ResourceClaimStatuses, "the node writes none")
}
