package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// A pod with a resource claim (Dynamic Resource Allocation) whose device
// the scheduler allocated from the driver gpu.example.com, on a node where
// no DRA driver is registered, as upstream's kubelet treats it
// (pkg/kubelet/cm/dra's PrepareResources, called before the sandbox is
// created): admitted, then held in ContainerCreating, never run, with a
// FailedPrepareDynamicResources event at each sync (the resync, every
// minute); another pod on the node runs.
func TestPodWithResourceClaimIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		tr := newTranscript(n)
		const uid = types.UID("00000000-0000-4000-8000-0000000000aa")
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: uid}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
		n.SetResourceClaim(claim)

		p := pod("trainer", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"serve"},
			Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}})
		p.UID = uid
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
		n.AddPod(p)
		n.AddPod(pod("bystander", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"serve"}}))
		tr.observe("trainer", "bystander")
		tr.run(130*time.Second, "trainer", "bystander")

		got := n.Pod("default", "trainer")
		assert.Equal(t, v1.PodPending, got.Status.Phase)
		if assert.Len(t, got.Status.ContainerStatuses, 1) {
			if w := got.Status.ContainerStatuses[0].State.Waiting; assert.NotNil(t, w) {
				assert.Equal(t, "ContainerCreating", w.Reason)
			}
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1.PodReadyToStartContainers {
				assert.Equal(t, v1.ConditionFalse, c.Status, "no sandbox")
			}
		}
		var failed []string
		for _, e := range n.Events() {
			if e.Reason == "FailedPrepareDynamicResources" {
				failed = append(failed, e.Time.Sub(tr.start).String()+" "+e.String())
			}
		}
		msg := " Pod default/trainer Warning FailedPrepareDynamicResources Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not registered"
		assert.Equal(t, []string{"0s" + msg, "1m0s" + msg, "2m0s" + msg}, failed, "at each sync, the pod worker's resync")
		assert.Len(t, n.Runtime().CallsOf(fake.RunPodSandbox), 1, "the bystander's sandbox only")
		assert.Equal(t, v1.PodRunning, n.Pod("default", "bystander").Status.Phase)
		golden(t, "resource-claim.txt", tr.b.String())
	})
}

// A pod asking for an extended resource that a DeviceClass maps to DRA
// (DRAExtendedResource, beta and on since 1.36): the node has no such
// extended resource, so admission leaves it out of the fit, as upstream's;
// the claim the scheduler made for it (status.extendedResourceClaimStatus)
// is checked as the pod's own claims are, and with no DRA driver
// registered the pod is held in ContainerCreating with upstream's event.
func TestPodWithExtendedResourceClaimIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		const uid = types.UID("00000000-0000-4000-8000-0000000000ab")
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "trainer-extended-resources-x7k2p", Namespace: "default", UID: "claim-uid"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: uid}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "container-0-request-0", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
		n.SetResourceClaim(claim)

		gpu := v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		p := pod("trainer", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"serve"},
			Resources: v1.ResourceRequirements{Requests: gpu, Limits: gpu}})
		p.UID = uid
		p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{
			ResourceClaimName: claim.Name,
			RequestMappings:   []v1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: "example.com/gpu", RequestName: "container-0-request-0"}},
		}
		n.AddPod(p)
		n.StepUntil(70*time.Second, func() bool { return false })

		got := n.Pod("default", "trainer")
		assert.Equal(t, v1.PodPending, got.Status.Phase, "admitted, not refused for example.com/gpu")
		if assert.Len(t, got.Status.ContainerStatuses, 1) {
			if w := got.Status.ContainerStatuses[0].State.Waiting; assert.NotNil(t, w) {
				assert.Equal(t, "ContainerCreating", w.Reason)
			}
		}
		assert.Equal(t, claim.Name, got.Status.ExtendedResourceClaimStatus.ResourceClaimName, "the scheduler's status is kept")
		var failed int
		for _, e := range n.Events() {
			if e.Reason == "FailedPrepareDynamicResources" {
				assert.Equal(t, "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not registered", e.Message)
				failed++
			}
		}
		assert.Equal(t, 2, failed, "at the first sync and at the resync")
		assert.Empty(t, n.Runtime().CallsOf(fake.RunPodSandbox), "no sandbox")
	})
}
