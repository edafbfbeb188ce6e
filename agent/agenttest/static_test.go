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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	mu      sync.Mutex
	last    []string // the static pods of the last call: name@config hash
	mirrors []string // the mirror pods of the last call, by name
}

func (m *mirrorCalls) SyncMirrorPods(_ context.Context, static, mirrors []*v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last, m.mirrors = m.last[:0], m.mirrors[:0]
	for _, p := range static {
		m.last = append(m.last, p.Name+"@"+p.Annotations["kubernetes.io/config.hash"])
	}
	for _, p := range mirrors {
		m.mirrors = append(m.mirrors, p.Name)
	}
	return nil
}

func (m *mirrorCalls) mirrorPods() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.mirrors...)
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

const oneShot = `apiVersion: v1
kind: Pod
metadata: {name: job, namespace: default}
spec:
  restartPolicy: Never
  containers:
  - {name: job, image: busybox:1.36, command: [sh, -c, env]}
`

// The mirror pod of a static pod that completed is no orphan: it stays, with
// the pod's final status, as upstream's (e2e_node "MirrorPod with EnvFiles
// ... should be able to consume variables from a file" waits for the
// mirror pod to succeed). Before, the agent handed it to MirrorPods as an
// orphan, which deleted it once the pod ended.
func TestCompletedStaticPodKeepsItsMirrorPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(oneShot), 0o600))
		mirrors := &mirrorCalls{}
		n := agenttest.NewNode(t, agenttest.Options{
			Agent: agent.Options{Sources: agent.SourceOptions{ManifestPath: dir}, Cluster: agent.ClusterOptions{MirrorPods: mirrors}},
			Rules: []fake.Rule{{Command: []string{"sh", "-c", "env"}, Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 20 * time.Second}}},
		})
		n.Step(5 * time.Second)
		static := mirrors.static()
		require.Len(t, static, 1, "the running static pod")
		hash := strings.TrimPrefix(static[0], "job-node1@")
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-node1", Namespace: "default",
			Annotations: map[string]string{"kubernetes.io/config.mirror": hash, "kubernetes.io/config.source": "api"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job", Image: "busybox:1.36"}}}})
		n.Step(5 * time.Second)
		assert.Equal(t, []string{"job-node1"}, mirrors.mirrorPods(), "its mirror pod, in sync")

		n.Step(30 * time.Second) // the container exits 0: the pod Succeeded
		assert.Empty(t, mirrors.static(), "no mirror pod to make for a pod that ended")
		assert.Empty(t, mirrors.mirrorPods(), "and its mirror pod is not an orphan to delete")
	})
}
