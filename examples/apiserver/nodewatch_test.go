package apiserver_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func TestNewNodeWatcherArguments(t *testing.T) {
	_, err := apiserver.NewNodeWatcher(nil, apiserver.NodeWatcherOptions{NodeName: "n1"})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	_, err = apiserver.NewNodeWatcher(fake.NewClientset(), apiserver.NodeWatcherOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}

// runInBubble runs run in a goroutine of the synctest bubble until the
// test function returns, then checks that it returned nil.
func runInBubble(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() {
		cancel()
		assert.NoError(t, <-done)
	}
}

// The watcher follows its own Node, and only it, from the API server:
// the Node as listed, then a label another writer adds.
func TestNodeWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mine := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "5"}}
		other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"not": "mine"}}}
		client := fake.NewClientset(mine, other)
		var selectors []string
		client.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
			selectors = append(selectors, a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String())
			return false, nil, nil
		})
		w, err := apiserver.NewNodeWatcher(client, apiserver.NodeWatcherOptions{NodeName: "n1"})
		require.NoError(t, err)
		_, err = w.Node()
		require.Error(t, err, "nothing read yet")

		defer runInBubble(t, w.Run)()
		synctest.Wait() // listed and watching
		n, err := w.Node()
		require.NoError(t, err)
		assert.Equal(t, "n1", n.Name, "its own Node, not another")
		assert.Equal(t, []string{"metadata.name=n1"}, selectors, "the watch selects the node by name")

		labelled := mine.DeepCopy()
		labelled.Labels = map[string]string{"kubernetes.io/e2e-9b1c": "42"}
		labelled.ResourceVersion = "7"
		_, err = client.CoreV1().Nodes().Update(t.Context(), labelled, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait() // the event went through the watch
		n, err = w.Node()
		require.NoError(t, err)
		assert.Equal(t, "42", n.Labels["kubernetes.io/e2e-9b1c"])

		n.Labels["changed"] = "by the caller"
		again, err := w.Node()
		require.NoError(t, err)
		assert.NotContains(t, again.Labels, "changed", "Node returns a copy")
	})
}

// A status update feeds the sink's Node too, but a read older than what
// the watch saw (the API server's cache lagging) does not replace it.
func TestNodeSinkStatusUpdateFeedsNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "5"}, Status: nodeStatus(v1.ConditionTrue)}
		s, client := newNodeSink(t, apiserver.NodeSinkOptions{SkipRegistration: true}, existing)
		var read *v1.Node // what a status update reads; nil: the tracker's
		client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			if read == nil {
				return false, nil, nil
			}
			return true, read.DeepCopy(), nil
		})
		require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionTrue)))
		n, err := s.Node()
		require.NoError(t, err, "read by the status update, without a watch")
		assert.Equal(t, "5", n.ResourceVersion)

		defer runInBubble(t, s.Watch)()
		labelled := existing.DeepCopy()
		labelled.Labels = map[string]string{"a": "1"}
		labelled.ResourceVersion = "7"
		_, err = client.CoreV1().Nodes().Update(t.Context(), labelled, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait()

		for _, tc := range []struct {
			name, rv string
			labels   map[string]string
			want     map[string]string
		}{
			{name: "an older read is ignored", rv: "6", want: map[string]string{"a": "1"}},
			{name: "a newer read counts", rv: "9", labels: map[string]string{"b": "2"}, want: map[string]string{"b": "2"}},
		} {
			read = existing.DeepCopy()
			read.ResourceVersion, read.Labels = tc.rv, tc.labels
			require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionTrue)), tc.name)
			n, err := s.Node()
			require.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, n.Labels, tc.name)
		}
	})
}
