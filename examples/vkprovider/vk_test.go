package vkprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
)

// TestVirtualKubelet runs VK's own node (nodeutil.NewNode: its pod
// controller, node controller and lease) with the provider, against
// client-go's fake clientset: VK registers the Node with the agent's
// status, writes the statuses of a pod bound to it, and a graceful
// deletion ends with the pod terminated and deleted from the API server.
func TestVirtualKubelet(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	opts := testOptions(t)
	opts.Agent.NodeName = ""
	opts.Client = client
	var p *vkprovider.Provider
	n, err := nodeutil.NewNode(nodeName, vkprovider.NewProviderFunc(opts, func(b *vkprovider.Provider) { p = b }),
		nodeutil.WithClient(client), func(c *nodeutil.NodeConfig) error {
			c.SkipDownwardAPIResolution = true
			c.NumWorkers = 2
			c.NodeSpec.Labels = map[string]string{v1.LabelHostname: nodeName}
			c.NodeSpec.Status = v1.NodeStatus{}
			return nil
		})
	require.NoError(t, err)
	require.NotNil(t, p)

	ctx, cancel := context.WithCancel(context.Background())
	pods, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	nodes, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	leases, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	provDone, nodeDone := make(chan error, 1), make(chan error, 1)
	go func() { provDone <- p.Run(ctx) }()
	go func() { nodeDone <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		pods.Stop()
		nodes.Stop()
		leases.Stop()
		for name, done := range map[string]chan error{"provider": provDone, "node": nodeDone} {
			select {
			case err := <-done:
				if name == "provider" {
					assert.NoError(t, err)
				}
			case <-time.After(wait):
				t.Errorf("the %s did not stop", name)
			}
		}
	})

	// The Node turns Ready with the agent's status.
	node := waitWatch(t, nodes, func(n *v1.Node) bool { return nodeCondition(n, v1.NodeReady) == v1.ConditionTrue })
	assert.Equal(t, nodeName, node.Labels[v1.LabelHostname])
	assert.NotEmpty(t, node.Status.Capacity.Pods())
	lease := waitWatch(t, leases, func(*coordinationv1.Lease) bool { return true }) // VK keeps the Lease
	assert.Equal(t, nodeName, lease.Name)
	assert.Equal(t, nodeName, ptr.Deref(lease.Spec.HolderIdentity, ""))

	pod := newPod("web", "nginx:1.27")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	_, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	got := waitWatch(t, pods, running)
	assert.Equal(t, hostIP, got.Status.HostIP)

	// A graceful deletion, as the API server makes it (the fake clientset
	// deletes at once: the test sets the deletion timestamp itself).
	_, err = client.CoreV1().Pods("default").Update(ctx, deleting(got, 30), metav1.UpdateOptions{})
	require.NoError(t, err)
	final := waitWatch(t, pods, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	require.Len(t, final.Status.ContainerStatuses, 1)
	require.NotNil(t, final.Status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(143), final.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	// Finished, the pod is deleted from the API server (by the provider,
	// as upstream's status manager; VK would wait for the grace period).
	deadline := time.After(wait)
	for {
		select {
		case ev := <-pods.ResultChan():
			if ev.Type == watch.Deleted {
				return
			}
		case <-deadline:
			t.Fatal("the pod was not deleted from the API server")
		}
	}
}

// waitWatch returns the first object of w's events that satisfies cond.
func waitWatch[T any](t *testing.T, w watch.Interface, cond func(T) bool) T {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev := <-w.ResultChan():
			if o, ok := ev.Object.(T); ok && ev.Type != watch.Deleted && cond(o) {
				return o
			}
		case <-deadline:
			t.Fatal("timed out watching")
		}
	}
}
