//go:build apiserver

package apiserver_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// What the API-server tests need of package agent's end-to-end helpers
// (agent/e2e_test.go), which an external test package cannot import.

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

// joinedNode is an agent joined to the control plane.
type joinedNode struct {
	t      *testing.T
	a      *agent.Agent
	cancel context.CancelFunc
	done   chan error
}

// startJoined joins an agent with opts to the API server client talks to,
// runs it and stops it when the test ends. opts is filled in with the
// tests' host IP and timings; unless it says otherwise, eviction sees a
// node with nothing measured, so that the test machine's own disk or memory
// never evicts a test's pods.
func startJoined(t *testing.T, client kubernetes.Interface, opts agent.Options, join apiserver.JoinOptions) *joinedNode {
	t.Helper()
	opts.Node.HostIPs = []string{"192.0.2.10"}
	if opts.Timings == (agent.Timings{}) {
		opts.Timings = fast
	}
	if opts.Eviction.Stats == nil {
		opts.Eviction.Stats = &evictiontest.Stats{}
	}
	if os.Getenv("KK_DEBUG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		join.Logger = opts.Logger
	}
	j, err := apiserver.Join(client, opts.NodeName, join)
	require.NoError(t, err)
	require.NoError(t, j.Apply(&opts))
	a, err := agent.New(opts)
	require.NoError(t, err)
	// Registered before the agent's stop, so it runs after it.
	t.Cleanup(func() { unmountUnder(t, opts.RootDir) })
	ctx, cancel := context.WithCancel(context.Background())
	n := &joinedNode{t: t, a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- j.Run(ctx, a) }()
	select {
	case <-a.Ready():
	case err := <-n.done:
		t.Fatalf("agent stopped at start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not start")
	}
	t.Cleanup(n.stop)
	return n
}

func (n *joinedNode) stop() {
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

// pods returns the agent's pods by name.
func (n *joinedNode) pods() map[string]v1.Pod {
	out := map[string]v1.Pod{}
	for _, p := range n.a.PodStatuses() {
		out[p.Name] = p
	}
	return out
}

func (n *joinedNode) waitGone(name string) {
	n.t.Helper()
	eventually(n.t, name+" gone from the agent", func() bool { _, ok := n.pods()[name]; return !ok })
}

// waitNodeCondition waits until the node's status, as the agent last built
// it, has the condition with the status.
func (n *joinedNode) waitNodeCondition(typ v1.NodeConditionType, want v1.ConditionStatus) {
	n.t.Helper()
	eventually(n.t, "node condition "+string(typ)+"="+string(want), func() bool {
		st, _ := n.a.NodeStatus()
		for _, c := range st.Conditions {
			if c.Type == typ && c.Status == want {
				return true
			}
		}
		return false
	})
}

// eventually polls cond until it holds or fails after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 60s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling a real API server and runtime
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

// cat runs cat in the pod's first container and returns its output and
// exit code.
func cat(t *testing.T, rt cri.Execer, p v1.Pod, files ...string) (string, int32) {
	t.Helper()
	_, id, ok := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	require.True(t, ok, p.Status.ContainerStatuses[0].ContainerID)
	resp, err := rt.ExecSync(context.Background(), id, append([]string{"cat"}, files...), 10*time.Second)
	require.NoError(t, err)
	return string(resp.Stdout), resp.ExitCode
}

// waitNoRunning waits until the pod with uid has no running container.
func waitNoRunning(t *testing.T, rt agent.Runtime, uid string) {
	t.Helper()
	eventually(t, "pod "+uid+" without running containers", func() bool {
		cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
		require.NoError(t, err)
		return len(cs) == 0
	})
}
