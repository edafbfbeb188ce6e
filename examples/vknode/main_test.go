package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// opencensus, which virtual-kubelet imports, starts its stats worker in an
// init function; spdystream's shutdown goroutine outlives a connection by
// a moment.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node", "--container-runtime-endpoint", "unix:///run/c.sock",
		"--root-dir", "/r", "--pod-logs-dir", "/l", "--port", "10250", "--node-ip", "192.0.2.7", "-v"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, &config{kubeconfig: "/k", nodeName: "kk-node", endpoint: "unix:///run/c.sock", rootDir: "/r", podLogsDir: "/l",
		port: 10250, nodeIP: "192.0.2.7", verbose: true}, c)

	c, err = parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(os.TempDir(), "vknode"), c.rootDir)
	assert.Zero(t, c.port, "no kubelet API unless asked for")
	assert.Empty(t, c.endpoint, "the embedded fake runtime")
}

func TestFlagErrors(t *testing.T) {
	required := []string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-name", "kk-node"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--node-name", "kk-node"}, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "/k"}, "--node-name is required"},
		{append([]string{"--port", "70000"}, required...), "--port=70000: not a port"},
		{append([]string{"--port", "-1"}, required...), "--port=-1: not a port"},
		{append([]string{"--node-ip", "nope"}, required...), "--node-ip=nope: not an IP address"},
		{[]string{"--kubeconfig", "/k", "--node-name", "KK_Node"}, "--node-name=KK_Node"},
		{append([]string{"--no-such-flag"}, required...), "no-such-flag"},
		{append(required, "extra"), "unexpected arguments"},
		{required, "kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestNodeJoins runs the node newNode builds against the fake clientset:
// VK registers it with upstream's labels and no taint, the agent's status
// turns it Ready, and the kubelet API answers over TLS, refusing a request
// without credentials.
func TestNodeJoins(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	c := &config{nodeName: "kk-node", rootDir: t.TempDir(), port: port, nodeIP: "127.0.0.1"}
	client := fake.NewClientset()
	p, n, err := newNode(c, client, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	nodes, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer nodes.Stop()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runNode(ctx, p, n, slog.New(slog.DiscardHandler), &out) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("runNode did not return")
		}
	}()

	deadline := time.After(20 * time.Second)
	var node *v1.Node
	for node == nil {
		select {
		case ev := <-nodes.ResultChan():
			if got, ok := ev.Object.(*v1.Node); ok && ev.Type != watch.Deleted && ready(got) {
				node = got
			}
		case <-deadline:
			t.Fatal("the node did not turn Ready")
		}
	}
	assert.Equal(t, "kk-node", node.Labels[v1.LabelHostname])
	assert.NotEmpty(t, node.Labels[v1.LabelOSStable])
	assert.NotEmpty(t, node.Labels[v1.LabelArchStable])
	assert.Empty(t, node.Spec.Taints, "ordinary pods need no toleration")
	assert.Equal(t, int32(port), node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	assert.Contains(t, node.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.1"})
	assert.Contains(t, out.String(), "node registered")

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://127.0.0.1:" + strconv.Itoa(port) + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.FileExists(t, filepath.Join(c.rootDir, "pki", "kubelet.crt"))
}

func ready(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// syncBuffer is stdout, written by runNode's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
