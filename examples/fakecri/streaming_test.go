package main

import (
	"bytes"
	"context"
	"errors"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// fakecri as crictl and a kubelet use it end to end: CRI over its socket,
// then exec, attach and port-forward sessions on the URLs it returns, with
// client-go's clients (those of kubectl and crictl).
func TestRunServesStreaming(t *testing.T) {
	dir, err := os.MkdirTemp("", "fakecri")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	ctx, cancel := context.WithCancel(context.Background())
	logs := newLogBuffer()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", endpoint}, logs) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return after its ctx ended")
		}
	}()

	// run logs this once both servers listen.
	logs.waitFor(t, "serving the fake CRI runtime")
	c, err := cri.Dial(ctx, endpoint, cri.DialOptions{})
	require.NoError(t, err)
	defer c.Close()
	sbConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	sb, err := c.RunPodSandbox(ctx, sbConfig, "")
	require.NoError(t, err)
	id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "shell"},
		Image:    &runtimeapi.ImageSpec{Image: "docker.io/local/busybox:1"},
		Command:  []string{"/bin/sh"},
		Stdin:    true,
	}, sbConfig)
	require.NoError(t, err)
	require.NoError(t, c.StartContainer(ctx, id))

	t.Run("exec", func(t *testing.T) {
		cases := []struct {
			name           string
			cmd            []string
			stdin          string
			stdout, stderr string
			code           int
		}{
			{name: "echo", cmd: []string{"echo", "-n", "hello"}, stdout: "hello"},
			{name: "stdin", cmd: []string{"cat"}, stdin: "piped\n", stdout: "piped\n"},
			{name: "exit code", cmd: []string{"sh", "-c", "echo out; exit 3"}, stdout: "out\n", code: 3},
			{name: "stderr", cmd: []string{"mkdir", "/etc"}, stderr: "mkdir: can't create directory '/etc': File exists\n", code: 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: tc.cmd, Stdin: tc.stdin != "", Stdout: true, Stderr: true})
				require.NoError(t, err)
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
				if tc.stdin != "" {
					opts.Stdin = strings.NewReader(tc.stdin)
				}
				err = executor(t, resp.Url).StreamWithContext(ctx, opts)
				var exitErr utilexec.ExitError
				switch {
				case tc.code == 0:
					require.NoError(t, err)
				case errors.As(err, &exitErr):
					assert.Equal(t, tc.code, exitErr.ExitStatus())
				default:
					t.Fatalf("want exit code %d, got %v", tc.code, err)
				}
				assert.Equal(t, tc.stdout, stdout.String())
				assert.Equal(t, tc.stderr, stderr.String())
			})
		}
	})

	t.Run("attach", func(t *testing.T) {
		resp, err := c.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		// The shell runs what the client writes; the client's stdin ends
		// after it, and so does the session (the container's stdin stays
		// open: no StdinOnce).
		err = executor(t, resp.Url).StreamWithContext(ctx, remotecommand.StreamOptions{
			Stdin: strings.NewReader("echo attached\n"), Stdout: &stdout, Stderr: &stderr,
		})
		require.NoError(t, err)
		assert.Equal(t, "attached\n", stdout.String())
		st, err := c.ContainerStatus(ctx, id, false)
		require.NoError(t, err)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.Status.State)
	})

	t.Run("port-forward", func(t *testing.T) {
		// default.yaml: the echo server on port 7 of every pod.
		resp, err := c.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{7}})
		require.NoError(t, err)
		u, err := url.Parse(resp.Url)
		require.NoError(t, err)
		transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
		require.NoError(t, err)
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		stop, ready := make(chan struct{}), make(chan struct{})
		var out, errOut bytes.Buffer
		pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:7"}, stop, ready, &out, &errOut)
		require.NoError(t, err)
		forwarded := make(chan error, 1)
		go func() { forwarded <- pf.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-forwarded:
			t.Fatalf("port-forward ended: %v", err)
		}
		ports, err := pf.GetPorts()
		require.NoError(t, err)
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
		require.NoError(t, err)
		_, err = io.WriteString(conn, "echo through the tunnel")
		require.NoError(t, err)
		buf := make([]byte, len("echo through the tunnel"))
		_, err = io.ReadFull(conn, buf)
		require.NoError(t, err)
		assert.Equal(t, "echo through the tunnel", string(buf))
		require.NoError(t, conn.Close())
		close(stop)
		require.NoError(t, <-forwarded)
	})
}

// executor is client-go's SPDY executor for a streaming URL, as crictl makes
// it.
func executor(t *testing.T, rawURL string) remotecommand.Executor {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	e, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	require.NoError(t, err)
	return e
}

// logBuffer collects run's log and lets a test wait for a line.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{}, 1)} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitFor waits until the log contains want; the deadline only bounds a
// broken test.
func (b *logBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		found := strings.Contains(b.buf.String(), want)
		b.mu.Unlock()
		if found {
			return
		}
		select {
		case <-b.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %q in the log", want)
		}
	}
}
