package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// instances returns the runtime's containers of the pod with the given
// name and container name (all of them with name ""), as states in
// creation order.
func instances(n *agenttest.Node, pod, name string) []runtimeapi.ContainerState {
	var out []runtimeapi.ContainerState
	for _, c := range n.Runtime().Containers() {
		if c.GetLabels()["io.kubernetes.pod.name"] == pod && (name == "" || c.GetMetadata().GetName() == name) {
			out = append(out, c.GetState())
		}
	}
	return out
}

// A crash-looping container keeps one dead instance, its newest, from the
// moment it dies, as upstream kubelet's pod container deletor keeps it:
// not the whole crash loop until the container garbage collection, a
// minute after the node started. The pod's status still counts every
// restart and shows the last termination.
func TestDeadInstancesOfARestartingContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "crash", Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}},
		}})
		n.AddPod(pod("loop", container("crash", "false"), container("web", "sleep", "3600")))
		// Attempts at 0s, ~1s, ~11s and ~31s (back-off 10s, then 20s),
		// each dying at once; the garbage collection first runs at 60s.
		n.Step(45 * time.Second)
		exited, running := runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_RUNNING
		assert.Equal(t, []runtimeapi.ContainerState{exited}, instances(n, "loop", "crash"), "the newest dead instance only")
		assert.Equal(t, []runtimeapi.ContainerState{running}, instances(n, "loop", "web"), "the running container is left alone")

		crash := containerStatus(t, n, "loop", "crash")
		assert.Equal(t, int32(3), crash.RestartCount)
		require.NotNil(t, crash.State.Terminated, "the fourth attempt's end")
		assert.Equal(t, int32(1), crash.State.Terminated.ExitCode)
		last := crash.State.Terminated.ContainerID

		// The fifth attempt, at ~71s, dies at once too: the fourth's dead
		// instance goes, and the status still names it as the last
		// termination.
		n.Step(30 * time.Second)
		assert.Equal(t, []runtimeapi.ContainerState{exited}, instances(n, "loop", "crash"))
		crash = containerStatus(t, n, "loop", "crash")
		assert.Equal(t, int32(4), crash.RestartCount)
		require.NotNil(t, crash.LastTerminationState.Terminated)
		assert.Equal(t, last, crash.LastTerminationState.Terminated.ContainerID)
		assert.Equal(t, "Error", crash.LastTerminationState.Terminated.Reason)
		assert.Equal(t, int32(1), crash.LastTerminationState.Terminated.ExitCode)
	})
}

// containerStatus returns the status of a container of a pod in the
// default namespace.
func containerStatus(t *testing.T, n *agenttest.Node, pod, name string) v1.ContainerStatus {
	t.Helper()
	p := n.Pod("default", pod)
	require.NotNil(t, p)
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no status of container %s in pod %s", name, pod)
	return v1.ContainerStatus{}
}

// Once a deleted pod has terminated, its dead containers leave the runtime
// within seconds, at the relist that sees them die, as upstream kubelet's
// (its PLEG's ContainerDied with the pod's content removable): not at the
// container garbage collection, up to a minute later. Its sandbox waits
// for the garbage collection.
func TestDeletedPodsContainersRemovedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "crash", Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}},
		}})
		n.AddPod(pod("gone", container("crash", "false"), container("web", "sleep", "3600")))
		n.Step(5 * time.Second)
		require.Equal(t, 1, running(n, "gone"))
		require.NotEmpty(t, instances(n, "gone", "crash"))

		n.DeletePod("default", "gone")
		deleted := n.Now()
		ok := n.StepUntil(10*time.Second, func() bool { return len(instances(n, "gone", "")) == 0 })
		assert.True(t, ok, "containers left after 10s: %v", instances(n, "gone", ""))
		t.Logf("containers removed %v after the deletion", n.Now().Sub(deleted))
		assert.Less(t, n.Now().Sub(deleted), 5*time.Second, "removed within seconds")
		sandboxes := 0
		for _, sb := range n.Runtime().Sandboxes() {
			if sb.GetMetadata().GetName() == "gone" {
				sandboxes++
			}
		}
		assert.Equal(t, 1, sandboxes, "the sandbox is the garbage collection's")
		assert.Nil(t, n.Pod("default", "gone"), "gone from the API server")
	})
}
