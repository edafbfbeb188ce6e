package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The end-to-end tests of the agent's kubelet behaviour run a whole node of
// agent/agenttest inside testing/synctest: upstream's default periods on a
// fake clock that the test steps, so that every assertion can name what
// happened and when, and a crash loop of a quarter of an hour takes
// milliseconds. Static pods come from a manifest directory, as on a
// standalone kubelet; pods of an API server come through Node.AddPod.

// busybox are the behaviours of agent.NewFakeRuntime's containers, which
// the manifests of these tests (and of containerd_test.go, where busybox
// runs them) are written for: "true" and `sh -c "exit 0"` exit 0 after
// 500ms, "false" and `sh -c "exit 1"` exit 1 after 500ms, anything else
// runs until it is stopped and dies on SIGTERM.
var busybox = []fake.Rule{
	{Command: []string{"true"}, Behavior: exitAfter(0, 500*time.Millisecond)},
	{Command: []string{"sh", "-c", "exit 0"}, Behavior: exitAfter(0, 500*time.Millisecond)},
	{Command: []string{"false"}, Behavior: exitAfter(1, 500*time.Millisecond)},
	{Command: []string{"sh", "-c", "exit 1"}, Behavior: exitAfter(1, 500*time.Millisecond)},
}

func exitAfter(code int32, d time.Duration) fake.Behavior {
	return fake.Behavior{Outcome: fake.Exit, ExitCode: code, RunFor: d}
}

// staticNode starts a node of agenttest whose manifest directory holds
// manifests (file name to content), with busybox's behaviours unless
// opts.Rules says otherwise. It returns the node and the directory. It must
// be called inside synctest.Test.
func staticNode(t *testing.T, opts agenttest.Options, manifests map[string]string) (*agenttest.Node, string) {
	t.Helper()
	dir := t.TempDir()
	for name, m := range manifests {
		writeFile(t, dir, name, m)
	}
	opts.Agent.Sources.ManifestPath = dir
	if opts.Rules == nil {
		opts.Rules = busybox
	}
	n := agenttest.NewNode(t, opts)
	t.Cleanup(func() {
		if t.Failed() {
			logEvents(t, n)
		}
	})
	return n, dir
}

// logEvents logs the node's events, to tell what happened when a test
// fails.
func logEvents(t *testing.T, n *agenttest.Node) {
	for _, e := range n.Events() {
		t.Logf("%s %s", e.Time.Format("15:04:05.000"), e)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
}

// mustPod returns the pod as the node's API server holds it (a static
// pod's status as its mirror pod would hold it), and fails the test if
// there is none.
func mustPod(t *testing.T, n *agenttest.Node, name string) v1.Pod {
	t.Helper()
	p := n.Pod("default", name)
	require.NotNil(t, p, "pod default/%s", name)
	return *p
}

// listed reports whether the agent has the pod among its desired pods, as
// its /pods lists them.
func listed(n *agenttest.Node, name string) bool {
	for _, p := range n.Agent().PodStatuses() {
		if p.Namespace == "default" && p.Name == name {
			return true
		}
	}
	return false
}

// podIs tells whether the named pod exists and cond holds for it.
func podIs(n *agenttest.Node, name string, cond func(p v1.Pod) bool) func() bool {
	return func() bool {
		p := n.Pod("default", name)
		return p != nil && cond(*p)
	}
}

func isReady(p v1.Pod) bool   { return condition(p, v1.PodReady) == v1.ConditionTrue }
func isRunning(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning }

func condition(p v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// runningContainers counts the running containers of a pod in the node's
// runtime.
func runningContainers(n *agenttest.Node, uid types.UID) int {
	c := 0
	for _, s := range n.Runtime().Containers() {
		if s.GetLabels()[cri.PodUIDLabel] == string(uid) && s.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c++
		}
	}
	return c
}

// starts returns when the container of the pod started, as offsets from
// start, from the node's Started events: every instance, including those
// the agent has since removed from the runtime.
func starts(n *agenttest.Node, start time.Time, pod, container string) []time.Duration {
	var out []time.Duration
	for _, e := range n.Events() {
		if e.Object == "Pod default/"+pod && e.Reason == "Started" && e.Message == "Started container "+container {
			out = append(out, e.Time.Sub(start))
		}
	}
	return out
}

// eventsAbout returns the events about object ("Pod default/web-node1")
// since start, each as "<time since start> <type> <reason>: <message>".
func eventsAbout(n *agenttest.Node, start time.Time, object string) []string {
	var out []string
	for _, e := range n.Events() {
		if e.Object == object && !e.Time.Before(start) {
			out = append(out, fmt.Sprintf("%s %s %s: %s", e.Time.Sub(start), e.Type, e.Reason, e.Message))
		}
	}
	return out
}

// seconds is a list of durations in seconds.
func seconds(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

const webPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`

// livePod fails its liveness probe at once.
const livePod = `
apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
`

// initPod runs two init containers that exit 0, then an app container.
const initPod = `apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
  - {name: first, image: busybox:1.36, command: ["true"]}
  - {name: second, image: busybox:1.36, command: [sh, -c, "exit 0"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
`

// crashPod's container exits 1 at once, forever.
const crashPod = `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - name: crash
    image: busybox:1.36
    command: ["false"]
`

// A static pod starts at once, is Running at once (its status is read
// after the sync that started it) and Ready at once too: that status finds
// the container started and not yet ready, which runs its readiness probe
// there and then, as upstream does.
func TestPodRunsAndTurnsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"web.yaml": webPod})
		start := n.Now()
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isReady)), "Ready")
		assert.Zero(t, n.Now().Sub(start), "Ready at")

		p := mustPod(t, n, "web-node1")
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		assert.Equal(t, "default", p.Namespace)
		assert.Equal(t, "node1", p.Spec.NodeName)
		require.Len(t, p.Status.ContainerStatuses, 1)
		cs := p.Status.ContainerStatuses[0]
		assert.True(t, cs.Ready)
		require.NotNil(t, cs.State.Running)
		assert.Zero(t, cs.State.Running.StartedAt.Sub(start), "started at once")
		assert.True(t, strings.HasPrefix(cs.ContainerID, "kubeletkit-fake://"), cs.ContainerID)
		assert.Equal(t, v1.ConditionTrue, condition(p, v1.ContainersReady))
		assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
		assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodReadyToStartContainers))
		assert.NotEmpty(t, p.Status.PodIP)
		assert.Empty(t, p.Status.HostIP, "no hostIP without Options.Cluster.ReportHostIPs, as upstream's standalone kubelet (no Node)")
		assert.Equal(t, v1.PodQOSBestEffort, p.Status.QOSClass)
		assert.True(t, listed(n, "web-node1"), "on /pods")
		assert.Equal(t, []string{
			`0s Normal Pulling: Pulling image "busybox:1.36"`,
			`0s Normal Pulled: Successfully pulled image "busybox:1.36" in 0s`,
			`0s Normal Created: Created container: web`,
			`0s Normal Started: Started container web`,
		}, eventsAbout(n, start, "Pod default/web-node1"))
	})
}

// A liveness probe that fails (failureThreshold 1) gets the container
// killed with SIGTERM and started again, at once the first time.
func TestFailingLivenessProbeRestartsTheContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"live.yaml": livePod})
		start := n.Now()
		restarted := podIs(n, "live-node1", func(p v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
		require.True(t, n.StepUntil(time.Minute, restarted), "a restart")
		// The probe fails at 1s, a period after the container started
		// (the pod was added before it started: the first run found
		// nothing to probe). The worker syncs the pod at once, reading
		// its status from the runtime rather than waiting for the PLEG,
		// kills the container and starts it again; the status read
		// after that sync shows it.
		assert.Equal(t, time.Second, n.Now().Sub(start), "restart seen at")
		p := mustPod(t, n, "live-node1")
		cs := p.Status.ContainerStatuses[0]
		assert.Equal(t, int32(1), cs.RestartCount)
		require.NotNil(t, cs.State.Running, "the new instance runs")
		last := cs.LastTerminationState.Terminated
		require.NotNil(t, last, "the killed instance is the last termination state")
		assert.Equal(t, int32(143), last.ExitCode, "stopped with SIGTERM")
		assert.Equal(t, "Error", last.Reason)
		assert.Equal(t, time.Second, last.FinishedAt.Sub(start))
		assert.Equal(t, seconds(0, 1), starts(n, start, "live-node1", "app"))

		events := eventsAbout(n, start, "Pod default/live-node1")
		require.Len(t, events, 9, "%q", events)
		// Upstream's message is the probe's output, empty here; the
		// prober says which command failed instead.
		assert.True(t, strings.HasPrefix(events[4], "1s Warning Unhealthy: Liveness probe failed: "), events[4])
		assert.Equal(t, []string{
			`1s Normal Killing: Container app failed liveness probe, will be restarted`,
			`1s Normal Pulled: Container image "busybox:1.36" already present on machine and can be accessed by the pod`,
			`1s Normal Created: Created container: app`,
			`1s Normal Started: Started container app`,
		}, events[5:9])
	})
}

// A container that keeps failing is restarted at once the first time, then
// after a back-off of 10s doubling up to 5m, upstream's, which its waiting
// state names.
func TestCrashLoopBackOffGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"crash.yaml": crashPod})
		start := n.Now()
		re := regexp.MustCompile(`^back-off (\S+) restarting failed container=crash pod=crash-node1_default\(([0-9a-f]+)\)$`)
		seen := map[int32]time.Duration{} // back-off by restart count
		var p v1.Pod
		n.StepUntil(16*time.Minute, func() bool {
			p = mustPod(t, n, "crash-node1")
			if len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				m := re.FindStringSubmatch(w.Message)
				require.NotNil(t, m, "message %q", w.Message)
				assert.Equal(t, string(p.UID), m[2])
				d, err := time.ParseDuration(m[1])
				require.NoError(t, err)
				seen[cs.RestartCount] = d
			}
			return false
		})
		// The waiting state shows in a status generated while the
		// back-off runs. During the first back-offs (10s, 20s, 40s) the
		// pod is synced only when they end, and that sync restarts the
		// container and reads its status at once: they are seen in the
		// restarts below, not in a status.
		assert.Equal(t, map[int32]time.Duration{
			4: 80 * time.Second, 5: 160 * time.Second, 6: 5 * time.Minute, 7: 5 * time.Minute,
		}, seen, "the back-off after each restart")
		// Each instance exits 500ms after it starts; the next starts at
		// the first sync once its back-off has passed since then: the
		// worker retries a failed sync every 10s.
		assert.Equal(t, seconds(0, 1, 12, 33, 74, 155, 316, 617, 918), starts(n, start, "crash-node1", "crash"))
		assert.Equal(t, v1.PodRunning, p.Status.Phase, "a crash-looping Always pod is Running")
		assert.Equal(t, v1.ConditionFalse, condition(p, v1.PodReady))
		assert.Equal(t, int32(8), p.Status.ContainerStatuses[0].RestartCount)
		last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
		require.NotNil(t, last)
		assert.Equal(t, int32(1), last.ExitCode)
		assert.Equal(t, "Error", last.Reason)
		backOffs := 0
		for _, e := range eventsAbout(n, start, "Pod default/crash-node1") {
			if strings.Contains(e, " Warning BackOff: ") {
				backOffs++
				assert.Contains(t, e, "Warning BackOff: Back-off restarting failed container crash in pod crash-node1_default("+string(p.UID)+")")
			}
		}
		assert.Positive(t, backOffs, "BackOff events")
	})
}

// Init containers run one at a time, in order, each to completion, before
// the app container starts.
func TestInitContainersRunInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"init.yaml": initPod})
		start := n.Now()
		appRunning := podIs(n, "init-node1", func(p v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
		require.True(t, n.StepUntil(time.Minute, appRunning), "app running")
		p := mustPod(t, n, "init-node1")
		require.Len(t, p.Status.InitContainerStatuses, 2)
		first, second := p.Status.InitContainerStatuses[0].State.Terminated, p.Status.InitContainerStatuses[1].State.Terminated
		require.NotNil(t, first)
		require.NotNil(t, second)
		assert.Equal(t, "Completed", first.Reason)
		assert.Equal(t, "Completed", second.Reason)
		assert.False(t, second.StartedAt.Before(&first.FinishedAt), "second started after first finished")
		app := p.Status.ContainerStatuses[0].State.Running
		assert.False(t, app.StartedAt.Before(&second.FinishedAt), "app started after init finished")
		assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		// Each init container exits 500ms after it starts; the next one
		// starts once the PLEG has seen it exit, and the app's start is
		// in the status at once.
		assert.Equal(t, seconds(0), starts(n, start, "init-node1", "first"))
		assert.Equal(t, seconds(1), starts(n, start, "init-node1", "second"))
		assert.Equal(t, seconds(2), starts(n, start, "init-node1", "app"))
		assert.Equal(t, 2*time.Second, n.Now().Sub(start), "app running seen at")
	})
}

// A static pod whose manifest is removed leaves the pods the agent lists
// at the manifest directory's next poll (every second on agenttest's fake
// clock), and is stopped at once: the termination reads the pod's status
// from the runtime rather than waiting for the PLEG.
func TestRemovingAManifestTerminatesThePod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, dir := staticNode(t, agenttest.Options{}, map[string]string{"web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "Running")
		p := mustPod(t, n, "web-node1")
		require.Equal(t, 1, runningContainers(n, p.UID))
		n.Step(time.Second)

		require.NoError(t, os.Remove(filepath.Join(dir, "web.yaml")))
		removed := n.Now()
		require.True(t, n.StepUntil(time.Minute, func() bool { return !listed(n, "web-node1") }), "web-node1 still listed")
		assert.Equal(t, time.Second, n.Now().Sub(removed), "gone from the list at the next poll")
		require.True(t, n.StepUntil(time.Minute, func() bool { return runningContainers(n, p.UID) == 0 }), "its container still runs")
		assert.Equal(t, time.Second, n.Now().Sub(removed), "stopped as the removal is seen")
		assert.Equal(t, []string{"1s Normal Killing: Stopping container web"}, eventsAbout(n, removed, "Pod default/web-node1"))
		// As upstream, a static pod's final phase is not terminal (its
		// mirror pod keeps Running); its container is terminated by the
		// kubelet.
		n.Step(time.Second)
		final := mustPod(t, n, "web-node1")
		assert.Equal(t, v1.PodRunning, final.Status.Phase)
		require.Len(t, final.Status.ContainerStatuses, 1)
		term := final.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(143), term.ExitCode)
		assert.Equal(t, v1.ConditionFalse, condition(final, v1.PodReady))
		assert.False(t, listed(n, "web-node1"), "not listed again")
	})
}

// A manifest that cannot be read holds no other pod, and is picked up once
// it is fixed.
func TestBrokenManifestDoesNotAffectOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, dir := staticNode(t, agenttest.Options{}, map[string]string{
			"broken.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n",
			"web.yaml":    webPod,
		})
		start := n.Now()
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isRunning)), "web Running")
		web := mustPod(t, n, "web-node1")
		var failed []string
		for _, e := range n.Events() {
			if e.Reason == "FailedValidation" {
				failed = append(failed, e.String())
			}
		}
		require.Len(t, failed, 1)
		assert.Contains(t, failed[0], "Node node1 Warning FailedValidation Error reading static pod manifest "+filepath.Join(dir, "broken.yaml")+": ")

		// The broken file, once fixed, is picked up at the next poll.
		writeFile(t, dir, "broken.yaml", strings.ReplaceAll(webPod, "name: web}", "name: fixed}"))
		fixed := n.Now()
		require.True(t, n.StepUntil(time.Minute, podIs(n, "fixed-node1", isRunning)), "fixed Running")
		assert.Equal(t, time.Second, n.Now().Sub(fixed), "Running as it starts, at the next poll")
		assert.Equal(t, seconds(1), starts(n, fixed, "fixed-node1", "web"))
		after := mustPod(t, n, "web-node1")
		assert.Equal(t, web.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID, "web untouched")
		assert.Zero(t, after.Status.ContainerStatuses[0].RestartCount)
		assert.Equal(t, seconds(0), starts(n, start, "web-node1", "web"))
	})
}
