package agenttest_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The test of docs/testing-controllers.md: a controller that replaces each
// failed worker pod with a new one, at most three times, tested against a
// fake node.

// replacer is the controller under test. Reconcile looks at the pods and
// says which to delete and which to create, as a controller's reconcile
// would through an API client.
type replacer struct{ generation int }

func (r *replacer) Reconcile(pods []*v1.Pod) (del []string, add []*v1.Pod) {
	for _, p := range pods {
		if p.Status.Phase == v1.PodFailed && r.generation < 3 {
			r.generation++
			del = append(del, p.Name)
			add = append(add, workerPod(fmt.Sprintf("worker-%d", r.generation)))
		}
	}
	return del, add
}

func workerPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers:    []v1.Container{{Name: "work", Image: "registry.example/worker:1", Command: []string{"/work"}}},
		},
	}
}

func TestReplacerGivesUpAfterThreeFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every worker runs for 30s and fails.
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{{
			Command:  []string{"/work"},
			Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 30 * time.Second, ExitCode: 2},
		}}})
		c := &replacer{}
		n.AddPod(workerPod("worker-0"))

		// The controller's loop, on the node's time: reconcile every 5s.
		for range 60 {
			n.Step(5 * time.Second)
			del, add := c.Reconcile(n.Pods())
			for _, name := range del {
				n.DeletePodWithGrace("default", name, 0)
			}
			for _, p := range add {
				n.AddPod(p)
			}
		}

		// Three replacements, then the last one is left Failed.
		assert.Equal(t, 3, c.generation)
		last := n.Pod("default", "worker-3")
		require.NotNil(t, last)
		assert.Equal(t, v1.PodFailed, last.Status.Phase)
		term := last.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(2), term.ExitCode)
		assert.Equal(t, "Error", term.Reason)
		for _, gone := range []string{"worker-0", "worker-1", "worker-2"} {
			assert.Nil(t, n.Pod("default", gone), gone)
		}
		// Each worker started once: the node never restarts a container
		// under restartPolicy Never.
		started := 0
		for _, e := range n.Events() {
			if e.Reason == "Started" {
				started++
			}
		}
		assert.Equal(t, 4, started)
	})
}
