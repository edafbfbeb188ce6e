package nodetest_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/examples/nodetest"
)

// Each way in sees the statuses the node writes as they come: a
// controller-runtime watch, a clientset watch and a shared informer.
func TestWatchesSeeTheNodesStatuses(t *testing.T) {
	tests := []struct {
		name string
		// watch starts watching pods and returns the pods seen so far,
		// oldest first.
		watch func(t *testing.T, n *nodetest.Node) func() []*v1.Pod
	}{
		{name: "controller-runtime client", watch: func(t *testing.T, n *nodetest.Node) func() []*v1.Pod {
			w, err := n.Client.Watch(context.Background(), &v1.PodList{})
			require.NoError(t, err)
			t.Cleanup(w.Stop)
			return drain(w)
		}},
		{name: "clientset", watch: func(t *testing.T, n *nodetest.Node) func() []*v1.Pod {
			w, err := n.Clientset.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			t.Cleanup(w.Stop)
			return drain(w)
		}},
		{name: "shared informer", watch: func(t *testing.T, n *nodetest.Node) func() []*v1.Pod {
			var mu sync.Mutex // the informer's goroutine records, the test reads
			var seen []*v1.Pod
			record := func(o any) {
				if p, ok := o.(*v1.Pod); ok {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, p)
				}
			}
			_, err := n.Informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    record,
				UpdateFunc: func(_, o any) { record(o) },
			})
			require.NoError(t, err)
			n.Start(nil)
			return func() []*v1.Pod {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(seen)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := nodetest.NewNode(t, nodetest.Options{})
				seen := tt.watch(t, n)
				n.CreatePod(&v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}},
				})
				require.True(t, n.StepUntil(time.Minute, func() bool { return n.PodReady("default", "web") }))

				pods := seen()
				require.NotEmpty(t, pods)
				assert.Empty(t, pods[0].Status.Phase, "first the pod as created")
				assert.Equal(t, "node1", pods[0].Spec.NodeName, "bound to the node")
				assert.NotEmpty(t, pods[0].UID)
				assert.True(t, agenttest.IsReady(pods[len(pods)-1]), "last the pod Ready")
			})
		})
	}
}

// drain returns a function that reads what w has delivered so far.
func drain(w watch.Interface) func() []*v1.Pod {
	var seen []*v1.Pod
	return func() []*v1.Pod {
		for {
			select {
			case e := <-w.ResultChan():
				if p, ok := e.Object.(*v1.Pod); ok {
					seen = append(seen, p)
				}
			default:
				return seen
			}
		}
	}
}

// The node's events are in the fake API server, as a joined node's are,
// and in agenttest's Events.
func TestEventsReachTheAPIServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := nodetest.NewNode(t, nodetest.Options{})
		n.CreatePod(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}},
		})
		n.Step(5 * time.Second)

		l, err := n.Clientset.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var inAPI []string
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == "web" {
				inAPI = append(inAPI, e.Reason)
				assert.Equal(t, "kubelet", e.Source.Component)
				assert.Equal(t, "node1", e.Source.Host)
			}
		}
		var kept []string
		for _, e := range n.PodEvents("default", "web") {
			kept = append(kept, e.Reason)
		}
		assert.Subset(t, kept, []string{"Pulled", "Created", "Started"})
		assert.ElementsMatch(t, kept, inAPI)
	})
}
