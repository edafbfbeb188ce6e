//go:build apiserver

package apiserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// A graceful node shutdown as the API server sees it: the Node NotReady
// with upstream's message and a Shutdown event, the pods (one of them
// system-cluster-critical, its priority set by the API server's Priority
// admission) Failed with reason Terminated and a DisruptionTarget
// condition the API server accepts, a pod bound meanwhile refused with
// NodeShutdown; once the shutdown is called off the Node is Ready again.
func TestAPIServerGracefulShutdown(t *testing.T) {
	admin, nodeClient, nodeName := apiEnv(t)
	ctx := context.Background()
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	n := startJoined(t, nodeClient, agent.Options{Runtime: rt, NodeName: nodeName, RootDir: filepath.Join(t.TempDir(), "root"),
		Shutdown: agent.ShutdownOptions{GracePeriod: 4 * time.Second, GracePeriodCriticalPods: 2 * time.Second}}, apiserver.JoinOptions{})
	waitAPINodeReady(t, admin, nodeName)

	suffix := rand.String(5)
	app, critical, late := "shutdown-app-"+suffix, "shutdown-critical-"+suffix, "shutdown-late-"+suffix
	createPod(t, admin, sleeper(app, nodeName))
	crit := sleeper(critical, nodeName)
	crit.Spec.PriorityClassName = "system-cluster-critical"
	created := createPod(t, admin, crit)
	require.NotNil(t, created.Spec.Priority, "the Priority admission plugin sets the priority")
	require.Equal(t, int32(2000000000), *created.Spec.Priority)
	for _, name := range []string{app, critical} {
		waitAPIPodRunning(t, admin, name)
	}

	started := time.Now()
	done := make(chan error, 1)
	go func() { done <- n.a.Shutdown(ctx) }()
	eventually(t, "the Node NotReady: node is shutting down", func() bool {
		nd, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionFalse && c.Reason == "KubeletNotReady" && c.Message == "node is shutting down"
			}
		}
		return false
	})
	createPod(t, admin, sleeper(late, nodeName))
	require.NoError(t, <-done)

	for _, name := range []string{app, critical} {
		var got *v1.Pod
		eventually(t, name+" Failed", func() bool {
			var err error
			got, err = admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == v1.PodFailed
		})
		assert.Equal(t, "Terminated", got.Status.Reason, name)
		assert.Equal(t, "Pod was terminated in response to imminent node shutdown.", got.Status.Message, name)
		assert.Equal(t, v1.ConditionTrue, condition(*got, v1.DisruptionTarget), name)
		for _, c := range got.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				assert.Equal(t, "TerminationByKubelet", c.Reason, name)
			}
		}
	}
	var refused *v1.Pod
	eventually(t, late+" refused", func() bool {
		var err error
		refused, err = admin.CoreV1().Pods("default").Get(ctx, late, metav1.GetOptions{})
		return err == nil && refused.Status.Phase == v1.PodFailed
	})
	assert.Equal(t, "NodeShutdown", refused.Status.Reason)
	assert.Equal(t, "Pod was rejected: Pod was rejected as the node is shutting down.", refused.Status.Message)

	// Events are written behind the client's rate limiter, seconds after
	// they are recorded (3-5s seen here): a single list can miss it.
	eventually(t, "a Shutdown event on the Node", func() bool {
		events, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + nodeName + ",reason=Shutdown"})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Message == "Shutdown manager detected shutdown event" && !e.LastTimestamp.Time.Before(started.Add(-time.Second)) {
				return true
			}
		}
		return false
	})

	n.a.CancelShutdown()
	waitAPINodeReady(t, admin, nodeName)
}
