//go:build containerd

package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// The end-to-end scenarios against the containerd of hack/containerd-start.sh,
// with its busybox image: the same manifests as on the fake runtime, each pod
// named after the test so that runs do not meet.

func ctrdNode(t *testing.T) (*node, string) {
	t.Helper()
	c, image := ctrdtest.Client(t)
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	return startNode(t, c, manifests, filepath.Join(dir, "root")), image
}

// ctrdManifest adapts a test manifest: the local busybox image, a short
// grace period (busybox's sleep ignores SIGTERM as PID 1), a unique name.
func ctrdManifest(m, image, name string) string {
	m = strings.ReplaceAll(m, "busybox:1.36", image)
	m = strings.Replace(m, "spec:\n", "spec:\n  terminationGracePeriodSeconds: 2\n", 1)
	return strings.Replace(m, "metadata: {name: ", "metadata: {name: "+name+"-", 1)
}

func TestContainerdPodRunsAndTurnsReady(t *testing.T) {
	n, image := ctrdNode(t)
	n.write("web.yaml", ctrdManifest(webPod, image, "ready"))
	p := n.waitPod("ready-web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	assert.True(t, strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), p.Status.ContainerStatuses[0].ContainerID)
	assert.NotEmpty(t, p.Status.PodIP, "an IP from the CNI bridge")
	require.NoError(t, os.Remove(filepath.Join(n.manifests, "web.yaml")))
	n.waitGone("ready-web-node1")
	waitNoRunning(t, n.a.Runtime(), string(p.UID))
}

func TestContainerdCrashLoopAndLiveness(t *testing.T) {
	n, image := ctrdNode(t)
	n.write("crash.yaml", ctrdManifest(crashPod, image, "loop"))
	n.write("live.yaml", ctrdManifest(livePod, image, "probe"))
	p := n.waitPod("loop-crash-node1", "CrashLoopBackOff after two restarts", func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	require.NotNil(t, last)
	assert.Equal(t, int32(1), last.ExitCode)
	assert.Equal(t, "Error", last.Reason)

	p = n.waitPod("probe-live-node1", "a restart by the liveness probe", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	assert.NotNil(t, p.Status.ContainerStatuses[0].LastTerminationState.Terminated)
	for _, f := range []string{"crash.yaml", "live.yaml"} {
		require.NoError(t, os.Remove(filepath.Join(n.manifests, f)))
	}
	n.waitGone("loop-crash-node1")
	n.waitGone("probe-live-node1")
}

func TestContainerdInitContainersAndAdoption(t *testing.T) {
	c, image := ctrdtest.Client(t)
	dir := t.TempDir()
	manifests, root := filepath.Join(dir, "manifests"), filepath.Join(dir, "root")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	first := startNode(t, c, manifests, root)
	first.write("init.yaml", ctrdManifest(initPod, image, "adopt"))
	running := func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	}
	before := first.waitPod("adopt-init-node1", "app running", running)
	require.Len(t, before.Status.InitContainerStatuses, 2)
	for _, ic := range before.Status.InitContainerStatuses {
		require.NotNil(t, ic.State.Terminated, ic.Name)
		assert.Equal(t, "Completed", ic.State.Terminated.Reason, ic.Name)
	}
	first.stop()

	second := startNode(t, c, manifests, root)
	after := second.waitPod("adopt-init-node1", "app running", running)
	assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID,
		fmt.Sprintf("adopted, not restarted: %+v", after.Status.ContainerStatuses[0]))
	require.NoError(t, os.Remove(filepath.Join(manifests, "init.yaml")))
	second.waitGone("adopt-init-node1")
	waitNoRunning(t, c, string(after.UID))
}

func TestContainerdContainerReadsMountedFiles(t *testing.T) {
	c, image := ctrdtest.Client(t)
	n, objects, hostDir, podName := volumeNode(t, c, image, "ctrd-vols")
	checkVolumes(t, n, c, objects, hostDir, podName)
}

// streamStates records the evented PLEG's stream states (agent.Metrics).
type streamStates struct {
	mu   sync.Mutex
	seen map[pleg.StreamState]int
}

func (s *streamStates) RelistDuration(time.Duration)           {}
func (s *streamStates) RelistInterval(time.Duration)           {}
func (s *streamStates) LastSeen(time.Time)                     {}
func (s *streamStates) EventsCoalesced(int)                    {}
func (s *streamStates) ObserveWork(podworkers.WorkObservation) {}
func (s *streamStates) PodStartDuration(time.Duration)         {}
func (s *streamStates) Event(string, string)                   {}

func (s *streamStates) StreamState(st pleg.StreamState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[st]++
}

func (s *streamStates) count(st pleg.StreamState) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[st]
}

// The evented PLEG on containerd: a pod turns Ready, a crashing container
// restarts into CrashLoopBackOff, and both pods go when their manifests do.
// On a containerd with container events (1.7, 2.x) the PLEG follows them
// and never falls back to relisting; on one without (Debian's 1.6) it falls
// back to relisting every second and the pods behave the same.
func TestContainerdEventedPLEG(t *testing.T) {
	c, image := ctrdtest.Client(t)
	hasEvents := ctrdtest.HasContainerEvents(t, c)
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	states := &streamStates{seen: map[pleg.StreamState]int{}}
	n := startNodeWith(t, agent.Options{Runtime: c, RootDir: filepath.Join(dir, "root"), EventedPLEG: true,
		Metrics: states, Sources: agent.SourceOptions{ManifestPath: manifests}})
	n.write("web.yaml", ctrdManifest(webPod, image, "evented"))
	n.write("crash.yaml", ctrdManifest(crashPod, image, "evented"))
	p := n.waitPod("evented-web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	n.waitPod("evented-crash-node1", "CrashLoopBackOff after two restarts", func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	for _, f := range []string{"web.yaml", "crash.yaml"} {
		require.NoError(t, os.Remove(filepath.Join(n.manifests, f)))
	}
	n.waitGone("evented-web-node1")
	n.waitGone("evented-crash-node1")
	waitNoRunning(t, c, string(p.UID))

	v := c.RuntimeVersion()
	t.Logf("%s %s: stream connected %d, failed %d, fallback %d times", v.RuntimeName, v.RuntimeVersion,
		states.count(pleg.StreamConnected), states.count(pleg.StreamFailed), states.count(pleg.StreamFallback))
	if hasEvents {
		assert.Positive(t, states.count(pleg.StreamConnected), "the PLEG followed the runtime's events")
		assert.Zero(t, states.count(pleg.StreamFailed), "the event stream never failed")
		assert.Zero(t, states.count(pleg.StreamFallback), "the PLEG never fell back to relisting")
	} else {
		assert.Zero(t, states.count(pleg.StreamConnected), "a runtime without container events")
		assert.Positive(t, states.count(pleg.StreamFallback), "the PLEG fell back to relisting")
	}
}
