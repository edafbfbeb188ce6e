package vkprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/admission"
)

// With a client, pods are admitted against the Node as the API server has
// it: a label another writer adds to it (upstream's cluster suite labels a
// node, then creates pods whose nodeSelector asks for that label) admits
// a pod that was refused before, as under upstream kubelet.
func TestAdmissionFollowsTheAPIServersNode(t *testing.T) {
	t.Parallel()
	const label = "kubernetes.io/e2e-9b1c"
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, ResourceVersion: "5"}}
	client := fake.NewClientset(node)
	// The API server's watch of the Node, scripted: unbuffered, so that a
	// send returns once the provider's watch took the event.
	events := make(chan watch.Event)
	client.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewProxyWatcher(events), nil
	})
	opts := testOptions(t)
	opts.Client = client
	e := start(t, opts)
	ctx := context.Background()
	decided := func(p *v1.Pod) bool { return running(p) || p.Status.Phase == v1.PodFailed }

	before := newPod("before", "nginx:1.27")
	before.Spec.NodeSelector = map[string]string{label: "42"}
	require.NoError(t, e.p.CreatePod(ctx, before))
	got := e.waitPod("before", decided)
	assert.Equal(t, admission.PredicateNodeAffinity, got.Status.Reason)
	assert.Equal(t, "Pod was rejected: Predicate NodeAffinity failed: "+admission.DescNodeAffinity, got.Status.Message)

	labelled := node.DeepCopy()
	labelled.Labels = map[string]string{label: "42"}
	labelled.ResourceVersion = "7"
	_, err := client.CoreV1().Nodes().Update(ctx, labelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	send(t, events, watch.Event{Type: watch.Modified, Object: labelled})
	// The watch takes the next event only once it has stored the last.
	send(t, events, watch.Event{Type: watch.Bookmark, Object: &v1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}})

	after := newPod("after", "nginx:1.27")
	after.Spec.NodeSelector = before.Spec.NodeSelector
	require.NoError(t, e.p.CreatePod(ctx, after))
	got = e.waitPod("after", decided)
	assert.Equal(t, v1.PodRunning, got.Status.Phase, "refused: %s: %s", got.Status.Reason, got.Status.Message)
}

// send hands ev to the Node's watch, or fails the test when nobody takes
// it.
func send(t *testing.T, events chan<- watch.Event, ev watch.Event) {
	t.Helper()
	select {
	case events <- ev:
	case <-time.After(wait):
		t.Errorf("nobody watches the Node: %s event not taken", ev.Type)
	}
}
