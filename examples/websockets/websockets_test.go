package websockets_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/examples/websockets"
)

// echoPort is the pod port that the fake runtime answers with an echo.
const echoPort = 8080

// What the fake runtime answers for kubectl cp's tar from a pod: a
// megabyte on stdout, then a line on stderr, the line kubectl cp is known
// to lose through the API server's translator.
var (
	tarCommand = []string{"tar", "cf", "-", "/tmp/data"}
	tarOut     = strings.Repeat("0123456789abcdef", 64<<10)
	tarErr     = "tar: removing leading '/' from member names\n"
)

// changes is an io.Writer for the agent's Out: each line it prints (a
// pod's phase or container states changed) wakes a waiter.
type changes struct {
	mu   sync.Mutex
	wake chan struct{}
}

func (c *changes) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// startNode runs the agent as examples/minikubelet composes it for a
// cluster, on its embedded fake runtime: the kubelet API on a loopback
// port (anonymous users allowed to do everything, as the test's client is
// one), Translator as its WebSockets, ExtendWebSocketsToKubelet declared,
// and the pod web-node1 whose port 8080 echoes. It returns the kubelet
// API's base URL once the pod runs. (Without the translator, the tests'
// WebSockets reach the fake runtime's streaming server as they are, and it
// refuses them: 403.)
func startNode(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: web, image: busybox:1.36, command: [sleep, "3600"]}
`), 0o600))
	out := &changes{wake: make(chan struct{}, 1)}
	a, err := agent.New(agent.Options{
		NodeName: "node1",
		RootDir:  filepath.Join(dir, "root"),
		Sources:  agent.SourceOptions{ManifestPath: manifests},
		Out:      out,
		HTTP:     agent.HTTPOptions{API: &agent.APIOptions{Listen: "127.0.0.1:0", Anonymous: true, WebSockets: websockets.Translator{}}},
		Eviction: agent.EvictionOptions{Thresholds: []eviction.Threshold{}},
	})
	require.NoError(t, err)
	a.FakeRuntime().SetPortRules([]fake.PortRule{{Port: echoPort, Handler: fake.EchoPort}})
	a.FakeRuntime().SetExecRules([]fake.ExecRule{{Command: tarCommand, Stdout: tarOut, Stderr: tarErr}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for running := false; !running; {
		for _, p := range a.PodStatuses() {
			running = running || p.Name == "web-node1" && p.Status.Phase == v1.PodRunning
		}
		if running {
			break
		}
		select {
		case <-out.wake:
		case err := <-done:
			t.Fatalf("the agent stopped: %v", err)
		case <-deadline.C:
			t.Fatalf("web-node1 is not Running: %+v", a.PodStatuses())
		}
	}
	return "https://" + a.APIAddr().String()
}

// client is the configuration of a client of the node's self-signed
// kubelet API.
var client = &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}

// Exec over v5.channel.k8s.io, as kubectl 1.30 and later speak it to a
// node that declares ExtendWebSocketsToKubelet: the whole output comes
// back on stdout and stderr, the exit code after it; stdin's end reaches
// the command (v5's CLOSE); with a tty, the terminal's echo and CRLF.
func TestExecOverV5(t *testing.T) {
	base := startNode(t)
	for _, tc := range []struct {
		name           string
		cmd            []string
		stdin          string
		tty            bool
		stdout, stderr string   // exactly
		has            []string // on stdout, with a tty
		err            string   // "" for exit 0
	}{{
		name: "output and exit code", cmd: []string{"sh", "-c", "echo out; exit 3"},
		stdout: "out\n", err: "command terminated with exit code 3",
	}, {
		name: "kubectl cp's tar: all of stdout, then stderr's last line", cmd: tarCommand, stdout: tarOut, stderr: tarErr,
	}, {
		name: "stdin to its end, and all of it back", cmd: []string{"cat"}, stdin: tarOut, stdout: tarOut,
	}, {
		name: "a tty", cmd: []string{"sh"}, stdin: "echo hi\nexit 4\n", tty: true,
		has: []string{"/ # ", "echo hi\r\n", "hi\r\n"}, err: "command terminated with exit code 4",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"command": tc.cmd, "output": {"1"}}
			if tc.tty {
				q.Set("tty", "1")
			} else {
				q.Set("error", "1")
			}
			if tc.stdin != "" {
				q.Set("input", "1")
			}
			exec, err := remotecommand.NewWebSocketExecutor(client, http.MethodGet, base+"/exec/default/web-node1/web?"+q.Encode())
			require.NoError(t, err)
			var stdout, stderr bytes.Buffer
			opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
			if !tc.tty {
				opts.Stderr = &stderr
			}
			if tc.stdin != "" {
				opts.Stdin = strings.NewReader(tc.stdin)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err = exec.StreamWithContext(ctx, opts)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.err)
			}
			if tc.tty {
				// The terminal echoes the input as it comes, between the
				// shell's output: only what is certain is checked.
				for _, h := range tc.has {
					assert.Contains(t, stdout.String(), h)
				}
			} else {
				assert.Equal(t, len(tc.stdout), stdout.Len())
				assert.True(t, tc.stdout == stdout.String(), "stdout: %.200q", stdout.String())
			}
			assert.Equal(t, tc.stderr, stderr.String())
		})
	}
}

// A port forward through the SPDY-over-WebSocket tunnel, as kubectl 1.31
// and later open it, reaches the pod's port: the ports are in the tunnelled
// streams, none in the query.
func TestPortForwardThroughTheTunnel(t *testing.T) {
	base := startNode(t)
	u, err := url.Parse(base + "/portForward/default/web-node1")
	require.NoError(t, err)
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, client)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesWithContext(ctx, dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", echoPort)},
		ready, io.Discard, io.Discard)
	require.NoError(t, err)
	forwarded := make(chan error, 1)
	go func() { forwarded <- pf.ForwardPorts() }()
	defer func() {
		cancel()
		assert.NoError(t, <-forwarded)
	}()
	select {
	case <-ready:
	case err := <-forwarded:
		t.Fatalf("port forward: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the port forward is not ready")
	}
	ports, err := pf.GetPorts()
	require.NoError(t, err)
	require.Len(t, ports, 1)

	for i := range 2 { // two connections over the one tunnel
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
		msg := fmt.Sprintf("ping %d\n", i)
		_, err = io.WriteString(conn, msg)
		require.NoError(t, err)
		line, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, msg, line)
		require.NoError(t, conn.Close())
	}
}
