//go:build containerd

package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

// shutdownPod runs busybox's sleep, which ignores SIGTERM as PID 1: it
// stops only when killed at the end of its grace period.
const shutdownPod = `apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  terminationGracePeriodSeconds: 30
  PRIORITY
  containers:
  - {name: app, image: IMAGE, command: [sleep, "3600"]}
`

// A node on containerd shuts down with 6s, 3s of them for critical pods:
// the ordinary pod's container is killed first, after its 3s, the critical
// pod's only after that, and both pods end Failed with upstream's reason.
func TestContainerdGracefulShutdownInPriorityOrder(t *testing.T) {
	c, image := ctrdtest.Client(t)
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	n := startNodeWith(t, agent.Options{
		Runtime:  c,
		RootDir:  filepath.Join(dir, "root"),
		Sources:  agent.SourceOptions{ManifestPath: manifests},
		Shutdown: agent.ShutdownOptions{GracePeriod: 6 * time.Second, GracePeriodCriticalPods: 3 * time.Second},
	})
	write := func(name, priority string) {
		m := strings.NewReplacer("NAME", name, "IMAGE", image, "PRIORITY", priority).Replace(shutdownPod)
		n.write(name+".yaml", m)
	}
	write("shutdown-app", "priority: 0")
	write("shutdown-critical", "priority: 2000000000")
	for _, name := range []string{"shutdown-app-node1", "shutdown-critical-node1"} {
		n.waitPod(name, "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.a.Shutdown(ctx))
	took := time.Since(start)
	n.waitNodeCondition(v1.NodeReady, v1.ConditionFalse)

	finished := map[string]time.Time{}
	for _, name := range []string{"shutdown-app-node1", "shutdown-critical-node1"} {
		p := n.waitPod(name, "Failed", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		assert.Equal(t, "Terminated", p.Status.Reason, name)
		assert.Equal(t, "Pod was terminated in response to imminent node shutdown.", p.Status.Message, name)
		assert.Equal(t, v1.ConditionTrue, condition(p, v1.DisruptionTarget), name)
		require.Len(t, p.Status.ContainerStatuses, 1, name)
		term := p.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, name)
		assert.Equal(t, int32(137), term.ExitCode, "%s: killed at the end of its grace period", name)
		finished[name] = term.FinishedAt.Time
	}
	app, critical := finished["shutdown-app-node1"], finished["shutdown-critical-node1"]
	assert.True(t, app.Before(critical), "the ordinary pod stopped (%s) before the critical one (%s)", app, critical)
	// Each container ignores SIGTERM and runs out its 3s: the critical
	// one, asked after the ordinary one had stopped, stops seconds later
	// (finishedAt has a resolution of one second).
	assert.GreaterOrEqual(t, critical.Sub(app), 2*time.Second)
	assert.GreaterOrEqual(t, took, 5*time.Second, "two groups of 3s each")
	t.Logf("shutdown took %s; the app stopped at %s, the critical pod %s later", took, app.Sub(start).Round(time.Millisecond), critical.Sub(app))
}
