package agenttest_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

const stubborn = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - {name: web, image: busybox:1.36, command: [sleep, "3600"]}
`

// running counts the containers of a pod name that run.
func running(n *agenttest.Node, name string) int {
	c := 0
	for _, s := range n.Runtime().Containers() {
		if s.GetLabels()["io.kubernetes.pod.name"] == name && s.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c++
		}
	}
	return c
}

// A static pod whose manifest is removed and put back while the pod is still
// terminating starts again once the termination is over: the agent re-sends
// the desired pods the workers forgot, as podworkers.SyncKnownPods asks.
func TestStaticPodPutBackWhileTerminatingStartsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		manifest := filepath.Join(dir, "web.yaml")
		require.NoError(t, os.WriteFile(manifest, []byte(stubborn), 0o600))
		n := agenttest.NewNode(t, agenttest.Options{
			Agent: agent.Options{ManifestPath: dir},
			// sleep as PID 1 ignores SIGTERM: stopping it takes the whole
			// grace period.
			Rules: []fake.Rule{{Command: []string{"sleep", "3600"}, Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}},
		})
		n.Step(2 * time.Second)
		require.Equal(t, v1.PodRunning, n.Pod("default", "web-node1").Status.Phase)
		require.Equal(t, 1, running(n, "web-node1"))

		require.NoError(t, os.Remove(manifest))
		n.Step(20 * time.Second) // the directory is read again
		require.Equal(t, 1, running(n, "web-node1"), "the container is still stopping")

		require.NoError(t, os.WriteFile(manifest, []byte(stubborn), 0o600))
		n.Step(20 * time.Second) // read again: the pod is desired again
		n.Step(30 * time.Second) // the grace period ends, the old container is killed
		n.Step(10 * time.Second)
		assert.Equal(t, 1, running(n, "web-node1"), "the pod runs again")
		p := n.Pod("default", "web-node1")
		require.NotNil(t, p)
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
	})
}
