package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The agent answers the kubelet API's questions about its pods: finds them
// by name, runs commands in their running containers and lists what the
// runtime runs.
func TestAPIPodsAndCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		a, ctx := n.Agent(), context.Background()

		p, ok := a.API().Pod("default", "web-node1")
		require.True(t, ok, "the static pod by its suffixed name")
		assert.Equal(t, "web-node1", p.Name)
		require.Len(t, p.Status.ContainerStatuses, 1, "with its status")
		_, ok = a.API().Pod("default", "web")
		assert.False(t, ok, "not by the manifest's name")
		_, ok = a.API().Pod("kube-system", "web-node1")
		assert.False(t, ok, "not in another namespace")

		out, err := a.API().RunInContainer(ctx, p, "web", []string{"echo", "hello"})
		require.NoError(t, err)
		assert.Equal(t, "hello\n", string(out))
		_, err = a.API().RunInContainer(ctx, p, "web", []string{"false"})
		assert.ErrorIs(t, err, agent.ErrCommandFailed)
		_, err = a.API().RunInContainer(ctx, p, "nosuch", []string{"true"})
		assert.EqualError(t, err, `container not found ("nosuch")`)

		running, err := a.API().RunningPods(ctx)
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

// The stats summary shows the runtime's pods with the CPU and memory the
// runtime reports, and the machine as the node.
func TestAPISummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"web.yaml": webPod})
		n.Runtime().SetUsageRules([]fake.UsageRule{{Usage: fake.Usage{NanoCores: 1_000_000, MemoryBytes: 4 << 20}}})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		s, err := n.Agent().API().Summary(context.Background(), true)
		if runtime.GOOS != "linux" {
			assert.Error(t, err, "no measure of the machine outside Linux")
			return
		}
		require.NoError(t, err)
		assert.Equal(t, "node1", s.Node.NodeName)
		require.Len(t, s.Pods, 1)
		p := s.Pods[0]
		assert.Equal(t, "web-node1", p.PodRef.Name)
		require.Len(t, p.Containers, 1)
		c := p.Containers[0]
		assert.Equal(t, "web", c.Name)
		require.NotNil(t, c.CPU.UsageNanoCores)
		assert.Equal(t, uint64(1_000_000), *c.CPU.UsageNanoCores)
		require.NotNil(t, c.Memory.WorkingSetBytes)
		assert.Equal(t, uint64(4<<20), *c.Memory.WorkingSetBytes)
	})
}

// A container's log grown past Logs.MaxSize is rotated at the next
// look (every 10s): the live file starts again, the old one is kept beside
// it, and kubectl logs reads the live one.
func TestContainerLogRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := agenttest.Options{Rules: []fake.Rule{{Name: "web", Behavior: fake.Behavior{
			Stdout: []string{strings.Repeat("x", 100)}, LogEvery: time.Second, LogRepeat: 1000}}}}
		opts.Agent.Logs.MaxSize = 1000
		n, _ := staticNode(t, opts, map[string]string{"web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		p := mustPod(t, n, "web-node1")
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "kubeletkit-fake://")
		resp, err := n.Runtime().ContainerStatus(context.Background(), id, false)
		require.NoError(t, err)
		path := resp.GetStatus().GetLogPath()
		n.Step(25 * time.Second)
		rotated, err := filepath.Glob(path + ".*")
		require.NoError(t, err)
		assert.NotEmpty(t, rotated, "rotated files beside %s", path)
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Less(t, st.Size(), int64(2000), "the live file started again")
	})
}

// With Logs.Dir set, the containers' logs go there, in upstream's layout
// (<namespace>_<name>_<uid>/<container>/<restart>.log), and not under the
// root dir.
func TestPodLogsDir(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var opts agenttest.Options
		opts.Agent.Logs.Dir = filepath.Join(t.TempDir(), "var-log-pods")
		n, _ := staticNode(t, opts, map[string]string{"web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		p := mustPod(t, n, "web-node1")
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "kubeletkit-fake://")
		resp, err := n.Runtime().ContainerStatus(context.Background(), id, false)
		require.NoError(t, err)
		want := filepath.Join(opts.Agent.Logs.Dir, "default_web-node1_"+string(p.UID), "web", "0.log")
		assert.Equal(t, want, resp.GetStatus().GetLogPath())
	})
}
