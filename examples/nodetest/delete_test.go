package nodetest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/examples/nodetest"
)

// A deletion through either client is graceful as on an API server: the
// pod gets a deletion timestamp, the node runs its preStop hook and stops
// it, and the pod is gone once the node has deleted it. Grace 0 removes it
// from the API server at once; the node still runs the hook, as upstream's
// kubelet does after a forced deletion.
func TestDeletionIsGraceful(t *testing.T) {
	tests := []struct {
		name     string
		grace    *int64 // nil: the pod's own, 30s
		clientCR bool   // through the controller-runtime client, else the clientset
	}{
		{name: "clientset, the pod's grace"},
		{name: "controller-runtime, the pod's grace", clientCR: true},
		{name: "clientset, grace 5s", grace: ptr.To[int64](5)},
		{name: "controller-runtime, grace 0", grace: ptr.To[int64](0), clientCR: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := nodetest.NewNode(t, nodetest.Options{})
				n.CreatePod(&v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec: v1.PodSpec{Containers: []v1.Container{{
						Name: "web", Image: "nginx:1.27",
						Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/drain"}}}},
					}}},
				})
				require.True(t, n.StepUntil(time.Minute, func() bool { return n.PodReady("default", "web") }))

				ctx := context.Background()
				if tt.clientCR {
					var o []client.DeleteOption
					if tt.grace != nil {
						o = append(o, client.GracePeriodSeconds(*tt.grace))
					}
					require.NoError(t, n.Client.Delete(ctx, n.Pod("default", "web"), o...))
				} else {
					require.NoError(t, n.Clientset.CoreV1().Pods("default").Delete(ctx, "web",
						metav1.DeleteOptions{GracePeriodSeconds: tt.grace}))
				}
				if p := n.Pod("default", "web"); tt.grace != nil && *tt.grace == 0 {
					assert.Nil(t, p, "removed at once")
				} else {
					require.NotNil(t, p, "kept until the node has stopped it")
					assert.NotNil(t, p.DeletionTimestamp)
				}
				require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web") == nil }))

				assert.Equal(t, []agenttest.Hook{{Handler: "PreStop", Command: []string{"/drain"}}}, n.Hooks("default", "web", "web"))
				for _, c := range n.Runtime().Containers() {
					assert.NotEqual(t, "CONTAINER_RUNNING", c.GetState().String(), "stopped")
				}
			})
		})
	}
}
