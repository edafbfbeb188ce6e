package nodetest_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubeletkit/kubeletkit/examples/nodetest"
)

// A reconciler's RequeueAfter comes due as the test steps the node: the
// controller's workqueue runs on the time Step moves.
func TestRequeueAfterFollowsTheNodesTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := nodetest.NewNode(t, nodetest.Options{})
		var mu sync.Mutex
		var at []time.Duration // since the pod's creation
		var created time.Time
		c, err := controller.NewTypedUnmanaged("requeue", controller.Options{
			Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				at = append(at, time.Since(created)) // the bubble's time, which the workqueue reads
				return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
			}),
			SkipNameValidation: ptr.To(true),
			Logger:             logr.Discard(),
		})
		require.NoError(t, err)
		require.NoError(t, c.Watch(&source.Informer{
			Informer: n.Informers.Core().V1().Pods().Informer(),
			Handler:  &handler.EnqueueRequestForObject{},
		}))
		n.Start(c)
		created = n.Now()
		n.CreatePod(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}},
		})
		n.Step(65 * time.Second)

		mu.Lock()
		defer mu.Unlock()
		// The pod's creation and the node's status writes reconcile at
		// once; then a requeue every 30s.
		require.GreaterOrEqual(t, len(at), 3, "reconciled at %v", at)
		assert.Equal(t, []time.Duration{0, 30 * time.Second, time.Minute}, at[len(at)-3:], "reconciled at %v", at)
	})
}
