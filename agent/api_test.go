package agent_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
)

// The agent answers the kubelet API's questions about its pods: finds them
// by name, runs commands in their running containers and lists what the
// runtime runs.
func TestAPIPodsAndCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		a, ctx := n.Agent(), context.Background()

		p, ok := a.Pod("default", "web-node1")
		require.True(t, ok, "the static pod by its suffixed name")
		assert.Equal(t, "web-node1", p.Name)
		require.Len(t, p.Status.ContainerStatuses, 1, "with its status")
		_, ok = a.Pod("default", "web")
		assert.False(t, ok, "not by the manifest's name")
		_, ok = a.Pod("kube-system", "web-node1")
		assert.False(t, ok, "not in another namespace")

		out, err := a.RunInContainer(ctx, p, "web", []string{"echo", "hello"})
		require.NoError(t, err)
		assert.Equal(t, "hello\n", string(out))
		_, err = a.RunInContainer(ctx, p, "web", []string{"false"})
		assert.ErrorIs(t, err, agent.ErrCommandFailed)
		_, err = a.RunInContainer(ctx, p, "nosuch", []string{"true"})
		assert.EqualError(t, err, `container not found ("nosuch")`)

		running, err := a.RunningPods(ctx)
		require.NoError(t, err)
		require.Len(t, running, 1)
		assert.Equal(t, "web-node1", running[0].Name)
		assert.Equal(t, "default", running[0].Namespace)
		assert.Equal(t, p.UID, running[0].UID)
		require.Len(t, running[0].Spec.Containers, 1)
		assert.Equal(t, "web", running[0].Spec.Containers[0].Name)
		assert.NotEmpty(t, running[0].Spec.Containers[0].Image, "the image as the runtime lists it")
	})
}
