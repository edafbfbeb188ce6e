package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
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

// The tests of this file run an agent on the real clock, for what a fake
// clock cannot show: a second agent process adopting the first one's
// containers, and the HTTP server. containerd_test.go runs the end-to-end
// scenarios against a real containerd with the same harness. Every other
// test of the package runs on agent/agenttest.

// fast are the timings of the real-clock tests: upstream's periods divided
// so that a pod runs and turns Ready within a second.
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

// node is one agent running on the real clock, with its manifest directory.
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
	return startNodeWith(t, agent.Options{Runtime: rt, RootDir: root, Sources: agent.SourceOptions{ManifestPath: manifests}})
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
	opts.Node.HostIPs, opts.HTTP.Listen = []string{"192.0.2.10"}, "127.0.0.1:0"
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
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{t: t, a: a, manifests: opts.Sources.ManifestPath, root: opts.RootDir, cancel: cancel, done: make(chan error, 1)}
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

// get fetches a path of the agent's HTTP server.
func (n *node) get(path string) (int, string) {
	n.t.Helper()
	resp, err := http.Get(n.base + path)
	require.NoError(n.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(n.t, err)
	return resp.StatusCode, string(b)
}

// pods reads /pods.
func (n *node) pods() map[string]v1.Pod {
	n.t.Helper()
	code, body := n.get("/pods")
	require.Equal(n.t, http.StatusOK, code, body)
	var list v1.PodList
	require.NoError(n.t, json.Unmarshal([]byte(body), &list), body)
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

// waitNodeCondition polls /node until the condition has the status.
func (n *node) waitNodeCondition(typ v1.NodeConditionType, want v1.ConditionStatus) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last v1.NodeStatus
	for time.Now().Before(deadline) {
		_, body := n.get("/node")
		var nd v1.Node
		require.NoError(n.t, json.Unmarshal([]byte(body), &nd), body)
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

// newNodeWith runs an agent with opts on its embedded fake runtime over a
// new manifest directory.
func newNodeWith(t *testing.T, opts agent.Options) *node {
	dir := t.TempDir()
	opts.Sources.ManifestPath, opts.RootDir = filepath.Join(dir, "manifests"), filepath.Join(dir, "root")
	require.NoError(t, os.Mkdir(opts.Sources.ManifestPath, 0o750))
	return startNodeWith(t, opts)
}

// A second agent over the same root directory and runtime (a kubelet
// restart) adopts the first one's pod: the same sandbox and container,
// not restarted.
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

// The read-only server serves /healthz, /pods (the live statuses), /node
// and Options.HTTP.MetricsHandler on /metrics.
func TestHTTPEndpoints(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics of the adapter\n") })
	n := newNodeWith(t, agent.Options{HTTP: agent.HTTPOptions{MetricsHandler: metrics}})
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	code, body := n.get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	code, body = n.get("/pods")
	assert.Equal(t, http.StatusOK, code)
	var pods v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &pods), body)
	assert.Equal(t, "PodList", pods.Kind)
	assert.Equal(t, "v1", pods.APIVersion)
	require.Len(t, pods.Items, 1)
	assert.Equal(t, "web-node1", pods.Items[0].Name)
	assert.Equal(t, v1.PodRunning, pods.Items[0].Status.Phase, "the live status")

	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)
	code, body = n.get("/node")
	assert.Equal(t, http.StatusOK, code)
	var nd v1.Node
	require.NoError(t, json.Unmarshal([]byte(body), &nd), body)
	assert.Equal(t, "Node", nd.Kind)
	assert.Equal(t, "node1", nd.Name)
	assert.Contains(t, nd.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "192.0.2.10"})
	assert.Contains(t, nd.Status.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: "node1"})
	assert.NotEmpty(t, nd.Status.NodeInfo.ContainerRuntimeVersion)

	code, body = n.get("/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "metrics of the adapter\n", body)

	code, _ = n.get("/nothing")
	assert.Equal(t, http.StatusNotFound, code)
}
