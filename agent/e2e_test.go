package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
)

// fast are the timings of the end-to-end tests: upstream's periods divided
// so that a crash loop or a probe failure plays out in a second or two.
var fast = agent.Timings{
	RelistPeriod:   100 * time.Millisecond,
	SourcePeriod:   200 * time.Millisecond,
	BackoffInitial: 200 * time.Millisecond,
	BackoffMax:     2 * time.Second,
	WorkerBackOff:  200 * time.Millisecond,
	Resync:         5 * time.Second,
	Housekeeping:   200 * time.Millisecond,
	NodeStatus:     100 * time.Millisecond,
	VolumeRefresh:  200 * time.Millisecond,
}

// node is one running agent with its manifest directory.
type node struct {
	t         *testing.T
	a         *agent.Agent
	manifests string
	root      string
	base      string
	cancel    context.CancelFunc
	done      chan error
}

// startNode runs an agent on rt (nil: its own embedded fake runtime) over a
// manifest directory, and stops it when the test ends.
func startNode(t *testing.T, rt agent.Runtime, manifests, root string) *node {
	t.Helper()
	return startNodeWith(t, agent.Options{Runtime: rt, RootDir: root, ManifestPath: manifests})
}

// startNodeWith runs an agent with opts, filled in with the tests' node
// name, host IP, listen address and timings. Unless opts says otherwise,
// eviction sees a node with nothing measured, so that the test machine's
// own disk or memory never evicts a test's pods.
func startNodeWith(t *testing.T, opts agent.Options) *node {
	t.Helper()
	if opts.NodeName == "" {
		opts.NodeName = "node1"
	}
	opts.HostIPs, opts.Listen = []string{"192.0.2.10"}, "127.0.0.1:0"
	if opts.Timings == (agent.Timings{}) {
		opts.Timings = fast
	}
	if opts.Eviction.Stats == nil {
		opts.Eviction.Stats = &evictiontest.Stats{}
	}
	if os.Getenv("KK_DEBUG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := agent.New(opts)
	require.NoError(t, err)
	// Registered before the agent's stop, so it runs after it.
	t.Cleanup(func() { unmountUnder(t, opts.RootDir) })
	manifests := opts.ManifestPath
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{t: t, a: a, manifests: manifests, root: opts.RootDir, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-n.done:
		t.Fatalf("agent stopped at start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not start")
	}
	n.base = "http://" + a.Addr().String()
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.cancel = nil
	select {
	case err := <-n.done:
		assert.NoError(n.t, err)
	case <-time.After(20 * time.Second):
		n.t.Error("agent did not stop")
	}
}

func (n *node) write(name, manifest string) {
	n.t.Helper()
	require.NoError(n.t, os.WriteFile(filepath.Join(n.manifests, name), []byte(manifest), 0o600))
}

// pods reads /pods.
func (n *node) pods() map[string]v1.Pod {
	n.t.Helper()
	resp, err := http.Get(n.base + "/pods")
	require.NoError(n.t, err)
	defer resp.Body.Close()
	require.Equal(n.t, http.StatusOK, resp.StatusCode)
	var list v1.PodList
	require.NoError(n.t, json.NewDecoder(resp.Body).Decode(&list))
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

// waitPod polls /pods until cond holds for the named pod, or fails after a
// deadline with the last status seen.
func (n *node) waitPod(name string, what string, cond func(p v1.Pod) bool) v1.Pod {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last v1.Pod
	for time.Now().Before(deadline) {
		p, ok := n.pods()[name]
		if ok && cond(p) {
			return p
		}
		last = p
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	js, _ := json.MarshalIndent(last.Status, "", "  ")
	n.t.Fatalf("pod %s: %s did not happen; last status:\n%s", name, what, js)
	return v1.Pod{}
}

func (n *node) waitGone(name string) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := n.pods()[name]; !ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Fatalf("pod %s still listed", name)
}

// eventually polls cond until it holds or fails after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 60s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for an event
	}
}

func condition(p v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func newNode(t *testing.T) *node {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	return startNode(t, nil, manifests, filepath.Join(dir, "root"))
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

func TestPodRunsAndTurnsReady(t *testing.T) {
	n := newNode(t)
	n.write("web.yaml", webPod)
	p := n.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	assert.Equal(t, "default", p.Namespace)
	assert.Equal(t, "node1", p.Spec.NodeName)
	require.Len(t, p.Status.ContainerStatuses, 1)
	cs := p.Status.ContainerStatuses[0]
	assert.True(t, cs.Ready)
	assert.NotNil(t, cs.State.Running)
	assert.True(t, strings.HasPrefix(cs.ContainerID, "kubeletkit-fake://"), cs.ContainerID)
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.ContainersReady))
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodInitialized))
	assert.Equal(t, v1.ConditionTrue, condition(p, v1.PodReadyToStartContainers))
	assert.NotEmpty(t, p.Status.PodIP)
	assert.Empty(t, p.Status.HostIP, "standalone, no hostIP, as upstream's (no Node)")
	assert.Equal(t, v1.PodQOSBestEffort, p.Status.QOSClass)
}

func TestFailingLivenessProbeRestartsTheContainer(t *testing.T) {
	n := newNode(t)
	n.write("live.yaml", livePod)
	p := n.waitPod("live-node1", "a restart", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	require.NotNil(t, last, "the killed instance is the last termination state")
	assert.Equal(t, int32(143), last.ExitCode, "stopped with SIGTERM")
}

func TestCrashLoopBackOffGrows(t *testing.T) {
	n := newNode(t)
	n.write("crash.yaml", crashPod)
	// The waiting message names the current back-off: 200ms after the
	// first restart, doubling with each restart up to the 2s cap. As
	// upstream, a dead container first shows Terminated and its back-off
	// only from the next sync, so a short window can pass unseen; what is
	// seen must follow restartCount.
	re := regexp.MustCompile(`^back-off (\S+) restarting failed container=crash pod=crash-node1_default\(`)
	seen := map[int32]time.Duration{}
	n.waitPod("crash-node1", "three back-offs", func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		w := cs.State.Waiting
		if w == nil || w.Reason != "CrashLoopBackOff" {
			return false
		}
		m := re.FindStringSubmatch(w.Message)
		require.NotNil(t, m, "message %q", w.Message)
		d, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		seen[cs.RestartCount] = d
		return len(seen) >= 3
	})
	for restarts, d := range seen {
		want := min(200*time.Millisecond<<(restarts-1), 2*time.Second)
		assert.Equal(t, want, d, "back-off after %d restarts", restarts)
	}
	p := n.pods()["crash-node1"]
	assert.Equal(t, v1.PodRunning, p.Status.Phase, "a crash-looping Always pod is Running")
	assert.Equal(t, v1.ConditionFalse, condition(p, v1.PodReady))
	assert.GreaterOrEqual(t, p.Status.ContainerStatuses[0].RestartCount, int32(3))
}

func TestInitContainersRunInOrder(t *testing.T) {
	n := newNode(t)
	n.write("init.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
  - {name: first, image: busybox:1.36, command: ["true"]}
  - {name: second, image: busybox:1.36, command: [sh, -c, "exit 0"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
`)
	p := n.waitPod("init-node1", "app running", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
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
}

func TestRemovingAManifestTerminatesThePod(t *testing.T) {
	n := newNode(t)
	n.write("web.yaml", webPod)
	p := n.waitPod("web-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	require.NoError(t, os.Remove(filepath.Join(n.manifests, "web.yaml")))
	n.waitGone("web-node1")
	rt := n.a.FakeRuntime()
	waitNoRunning(t, rt, string(p.UID))
}

func waitNoRunning(t *testing.T, rt agent.Runtime, uid string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
		require.NoError(t, err)
		if len(cs) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s still has running containers", uid)
}

func TestBrokenManifestDoesNotAffectOthers(t *testing.T) {
	n := newNode(t)
	n.write("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n")
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	// The broken file, once fixed, is picked up.
	n.write("broken.yaml", strings.ReplaceAll(webPod, "name: web}", "name: fixed}"))
	n.waitPod("fixed-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
}

func TestRestartedAgentAdoptsRunningContainers(t *testing.T) {
	dir := t.TempDir()
	manifests, root := filepath.Join(dir, "manifests"), filepath.Join(dir, "root")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)

	first := startNode(t, rt, manifests, root)
	first.write("web.yaml", webPod)
	before := first.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	first.stop()

	second := startNode(t, rt, manifests, root)
	after := second.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	assert.Equal(t, before.UID, after.UID, "the UID comes from the manifest")
	assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID, "the same container, adopted")
	assert.Zero(t, after.Status.ContainerStatuses[0].RestartCount)

	sbs, err := rt.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.PodUIDLabel: string(after.UID)}})
	require.NoError(t, err)
	assert.Len(t, sbs, 1, "no second sandbox")
	cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{cri.PodUIDLabel: string(after.UID)}})
	require.NoError(t, err)
	assert.Len(t, cs, 1, "no second container")
}

func TestHTTPEndpoints(t *testing.T) {
	n := newNode(t)
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	get := func(path string) (int, string) {
		resp, err := http.Get(n.base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	code, body = get("/pods")
	assert.Equal(t, http.StatusOK, code)
	var pods v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &pods), body)
	assert.Equal(t, "PodList", pods.Kind)
	assert.Equal(t, "v1", pods.APIVersion)
	require.Len(t, pods.Items, 1)
	assert.Equal(t, "web-node1", pods.Items[0].Name)
	assert.Equal(t, v1.PodRunning, pods.Items[0].Status.Phase, "the live status")

	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)
	code, body = get("/node")
	assert.Equal(t, http.StatusOK, code)
	var nd v1.Node
	require.NoError(t, json.Unmarshal([]byte(body), &nd), body)
	assert.Equal(t, "Node", nd.Kind)
	assert.Equal(t, "node1", nd.Name)
	assert.Contains(t, nd.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "192.0.2.10"})
	assert.Contains(t, nd.Status.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: "node1"})
	assert.NotEmpty(t, nd.Status.NodeInfo.ContainerRuntimeVersion)

	code, _ = get("/nothing")
	assert.Equal(t, http.StatusNotFound, code)
}

// waitNodeCondition polls /node until the condition has the status.
func (n *node) waitNodeCondition(typ v1.NodeConditionType, want v1.ConditionStatus) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last v1.NodeStatus
	for time.Now().Before(deadline) {
		resp, err := http.Get(n.base + "/node")
		require.NoError(n.t, err)
		var nd v1.Node
		err = json.NewDecoder(resp.Body).Decode(&nd)
		resp.Body.Close()
		require.NoError(n.t, err)
		for _, c := range nd.Status.Conditions {
			if c.Type == typ && c.Status == want {
				return
			}
		}
		last = nd.Status
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	n.t.Fatalf("node condition %s=%s not seen; last conditions: %+v", typ, want, last.Conditions)
}
