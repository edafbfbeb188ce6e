package agenttest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
			Agent: agent.Options{Sources: agent.SourceOptions{ManifestPath: dir}},
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

// mirrorCalls records what the agent asks of its MirrorPods.
type mirrorCalls struct {
	mu   sync.Mutex
	last []string // the static pods of the last call: name@config hash
}

func (m *mirrorCalls) SyncMirrorPods(_ context.Context, static, _ []*v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = m.last[:0]
	for _, p := range static {
		m.last = append(m.last, p.Name+"@"+p.Annotations["kubernetes.io/config.hash"])
	}
	return nil
}

func (m *mirrorCalls) static() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.last...)
}

// An updated static pod manifest does not replace the mirror pod while the
// old pod is terminating: its mirror pod stays through the grace period, and
// the new pod's is made once the old pod is gone and the new one starts.
func TestUpdatedStaticPodMirrorWaitsForTheOldPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		manifest := filepath.Join(dir, "web.yaml")
		require.NoError(t, os.WriteFile(manifest, []byte(stubborn), 0o600))
		mirrors := &mirrorCalls{}
		n := agenttest.NewNode(t, agenttest.Options{
			Agent: agent.Options{Sources: agent.SourceOptions{ManifestPath: dir}, Cluster: agent.ClusterOptions{MirrorPods: mirrors}},
			Rules: []fake.Rule{{Command: []string{"sleep", "3600"}, Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}},
		})
		n.Step(5 * time.Second)
		before := mirrors.static()
		require.Len(t, before, 1, "the running static pod has its mirror pod")

		require.NoError(t, os.WriteFile(manifest, []byte(strings.Replace(stubborn, "busybox:1.36", "busybox:1.37", 1)), 0o600))
		n.Step(25 * time.Second) // read again; the old pod is terminating (30s of grace)
		assert.Empty(t, mirrors.static(), "the name is left alone while its old pod terminates")
		n.Step(30 * time.Second) // the grace period ends; the new pod starts
		after := mirrors.static()
		require.Len(t, after, 1)
		assert.NotEqual(t, before, after, "the new pod's mirror pod")
	})
}
