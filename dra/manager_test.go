package dra_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/dra"
)

const podUID = types.UID("pod-uid")

func podWith(claims ...v1.PodResourceClaim) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: podUID},
		Spec: v1.PodSpec{ResourceClaims: claims, Containers: []v1.Container{{Name: "app"}}}}
}

// claim is an allocated claim reserved for the pod, its devices from the
// given drivers.
func claim(name string, drivers ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web", UID: podUID}}
	c.Status.Allocation = &resourcev1.AllocationResult{}
	for _, d := range drivers {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: d, Pool: "node1", Device: "gpu-0"})
	}
	return c
}

func ownedByPod(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: podUID, Controller: ptr.To(true)}}
	return c
}

// apiClaims serves claims as an API server would, NotFound for others.
func apiClaims(claims ...*resourcev1.ResourceClaim) dra.Claims {
	return dra.ClaimsFunc(func(_ context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
		for _, c := range claims {
			if c.Namespace == namespace && c.Name == name {
				return c.DeepCopy(), nil
			}
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name)
	})
}

func byName(pc, name string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: pc, ResourceClaimName: ptr.To(name)}
}

func byTemplate(pc string) v1.PodResourceClaim {
	return v1.PodResourceClaim{Name: pc, ResourceClaimTemplateName: ptr.To("tmpl")}
}

// The checks of upstream's DRA manager (pkg/kubelet/cm/dra/manager.go
// prepareResources), in its order and words, on a node that registers no
// DRA driver.
func TestPrepareResources(t *testing.T) {
	notReserved := claim("gpu", "gpu.example.com")
	notReserved.Status.ReservedFor = nil
	notAllocated := claim("gpu")
	notAllocated.Status.Allocation = nil
	otherOwner := claim("made", "gpu.example.com")
	otherOwner.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "other", UID: "other-uid", Controller: ptr.To(true)}}
	madeFor := func(p *v1.Pod, name *string) *v1.Pod {
		p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "pc", ResourceClaimName: name}}
		return p
	}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		claims dra.Claims
		want   string
		is     error
	}{
		{"no claims", podWith(), nil, "", nil},
		{"a claim whose driver is not registered", podWith(byName("pc", "gpu")), apiClaims(claim("gpu", "gpu.example.com")),
			"prepare dynamic resources: DRA driver gpu.example.com is not registered", dra.ErrDriverNotRegistered},
		{"the first driver of the allocation", podWith(byName("pc", "gpu")), apiClaims(claim("gpu", "a.example.com", "b.example.com")),
			"prepare dynamic resources: DRA driver a.example.com is not registered", dra.ErrDriverNotRegistered},
		{"an empty driver name", podWith(byName("pc", "gpu")), apiClaims(claim("gpu", "")),
			"prepare dynamic resources: DRA driver name is empty", nil},
		{"a claim that allocates no device needs no driver", podWith(byName("pc", "gpu")), apiClaims(claim("gpu")), "", nil},
		{"the claim does not exist", podWith(byName("pc", "gpu")), apiClaims(),
			`prepare dynamic resources: fetch ResourceClaim gpu: resourceclaims.resource.k8s.io "gpu" not found`, nil},
		{"no source of claims", podWith(byName("pc", "gpu")), nil,
			"prepare dynamic resources: fetch ResourceClaim gpu: no source of ResourceClaims", dra.ErrNoClaims},
		{"not reserved for the pod", podWith(byName("pc", "gpu")), apiClaims(notReserved),
			"prepare dynamic resources: pod web (pod-uid) is not allowed to use ResourceClaim gpu (gpu-uid)", nil},
		{"not allocated", podWith(byName("pc", "gpu")), apiClaims(notAllocated),
			"prepare dynamic resources: ResourceClaim gpu: not allocated", dra.ErrNotAllocated},
		{"a template's claim not made yet", podWith(byTemplate("pc")), apiClaims(),
			`prepare dynamic resources: pod "ns/web": ResourceClaim not created yet`, dra.ErrClaimNotCreated},
		{"a template that needs no claim", madeFor(podWith(byTemplate("pc")), nil), apiClaims(), "", nil},
		{"a template's claim", madeFor(podWith(byTemplate("pc")), ptr.To("made")), apiClaims(ownedByPod(claim("made", "gpu.example.com"))),
			"prepare dynamic resources: DRA driver gpu.example.com is not registered", dra.ErrDriverNotRegistered},
		{"a template's claim owned by another pod", madeFor(podWith(byTemplate("pc")), ptr.To("made")), apiClaims(otherOwner),
			"prepare dynamic resources: ResourceClaim ns/made was not created for Pod ns/web (Pod is not owner)", nil},
		{"neither a claim nor a template", podWith(v1.PodResourceClaim{Name: "pc"}), apiClaims(),
			`prepare dynamic resources: pod "ns/web", spec.resourceClaim "pc": none of the supported fields are set`, dra.ErrUnsupportedClaim},
		{"the first claim that fails", podWith(byName("a", "none"), byName("b", "gpu")), apiClaims(claim("none"), claim("gpu", "gpu.example.com")),
			"prepare dynamic resources: DRA driver gpu.example.com is not registered", dra.ErrDriverNotRegistered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := dra.New(dra.Options{Claims: tc.claims})
			require.NoError(t, err)
			err = m.PrepareResources(context.Background(), tc.pod)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// The claim the scheduler made for an extended resource served by DRA
// (status.extendedResourceClaimStatus) is prepared as the pod's own.
func TestPrepareResourcesExtendedResourceClaim(t *testing.T) {
	pod := podWith()
	pod.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext"}
	m, err := dra.New(dra.Options{Claims: apiClaims(claim("ext", "gpu.example.com"))})
	require.NoError(t, err)
	err = m.PrepareResources(context.Background(), pod)
	assert.EqualError(t, err, "prepare dynamic resources: DRA driver gpu.example.com is not registered")
	assert.True(t, errors.Is(err, dra.ErrDriverNotRegistered))
}
