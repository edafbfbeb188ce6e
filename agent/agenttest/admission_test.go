package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Pods refused at admission through the API server keep the status the
// refusal wrote, as upstream's: phase Failed, the reason, "Pod was
// rejected: " and the message, and nothing else, a minute later too.
func TestAdmissionThroughTheAPIServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{KubeReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}})
		app := func(name string, created time.Time) *v1.Pod {
			return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
		}
		now := n.Now()
		big := app("big", now)
		// 8Gi of capacity, less 1Gi kube-reserved and the 100Mi of the
		// memory.available threshold.
		big.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("7Gi")}
		selector := app("selector", now)
		selector.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		portA, portB := app("port-a", now), app("port-b", now.Add(time.Second))
		for _, p := range []*v1.Pod{portA, portB} {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}
		for _, p := range []*v1.Pod{big, selector, portA, portB} {
			n.AddPod(p)
		}
		n.Step(time.Minute)

		// The API server's informer sends a refused pod back with its
		// Failed status, a RECONCILE: that starts no worker.
		n.Resend()
		n.Step(time.Minute)

		alloc := int64(8<<30 - 1<<30 - 100<<20)
		for _, tc := range []struct{ name, reason, message string }{
			{"big", "OutOfmemory", "Node didn't have enough resource: memory, requested: 7516192768, used: 0, capacity: " +
				resource.NewQuantity(alloc, resource.BinarySI).AsDec().String()},
			{"selector", "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
			{"port-b", "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		} {
			p := n.Pod("default", tc.name)
			require.NotNil(t, p, tc.name)
			assert.Equal(t, v1.PodFailed, p.Status.Phase, tc.name)
			assert.Equal(t, tc.reason, p.Status.Reason, tc.name)
			assert.Equal(t, "Pod was rejected: "+tc.message, p.Status.Message, tc.name)
			assert.Empty(t, p.Status.Conditions, tc.name)
			assert.Empty(t, p.Status.ContainerStatuses, tc.name)
			assert.Empty(t, p.Status.HostIP, tc.name)
		}
		assert.Equal(t, v1.PodRunning, n.Pod("default", "port-a").Status.Phase)
		st, ok := n.Agent().NodeStatus()
		require.True(t, ok)
		mem := st.Allocatable[v1.ResourceMemory]
		assert.Equal(t, alloc, mem.Value(), "the allocatable the Node reports is the one admission counts against")
	})
}

// A pod that needs a node feature the node does not declare is refused as
// upstream kubelet 1.36 refuses it (its declared features admit handler):
// a host-network pod in a user namespace (hostUsers: false), which needs
// UserNamespacesHostNetworkSupport (off by default upstream, not declared),
// becomes Failed with PodFeatureUnsupported and a Warning event of that
// reason, and does not run; a pod beside it is unaffected.
func TestAdmissionRefusesUndeclaredNodeFeatures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "userns-host-net"},
			Spec: v1.PodSpec{HostNetwork: true, HostUsers: ptr.To(false), Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
		n.Step(10 * time.Second)

		p := n.Pod("default", "userns-host-net")
		assert.Equal(t, v1.PodFailed, p.Status.Phase)
		assert.Equal(t, "PodFeatureUnsupported", p.Status.Reason)
		assert.Equal(t, "Pod was rejected: Pod requires node features that are not available: UserNamespacesHostNetworkSupport", p.Status.Message)
		assert.Empty(t, p.Status.ContainerStatuses)
		assert.Empty(t, n.Runtime().CallsOf(fake.RunPodSandbox)[1:], "only the plain pod's sandbox")
		var reasons []string
		for _, e := range n.Events() {
			if e.Object == "Pod default/userns-host-net" {
				reasons = append(reasons, e.Type+" "+e.Reason)
			}
		}
		assert.Equal(t, []string{"Warning PodFeatureUnsupported"}, reasons)
		assert.Equal(t, v1.PodRunning, n.Pod("default", "plain").Status.Phase)
	})
}
