package vkprovider_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// buffer is a WriteCloser VK's streams stand in for, safe for concurrent
// use.
type buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *buffer) Close() error { return nil }
func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// attachIO is VK's api.AttachIO as its exec and attach handlers make it.
type attachIO struct {
	in          io.Reader
	out, errOut *buffer
	tty         bool
	resize      chan api.TermSize
}

var _ api.AttachIO = (*attachIO)(nil)

func (a *attachIO) Stdin() io.Reader {
	if a.in == nil {
		return nil
	}
	return a.in
}
func (a *attachIO) Stdout() io.WriteCloser { return a.out }
func (a *attachIO) Stderr() io.WriteCloser {
	if a.errOut == nil {
		return nil
	}
	return a.errOut
}
func (a *attachIO) TTY() bool                   { return a.tty }
func (a *attachIO) Resize() <-chan api.TermSize { return a.resize }

// TestStreams execs, attaches, reads logs and forwards a port through the
// nodeutil.Provider methods, on the fake runtime's streaming server.
func TestStreams(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	rt := e.p.Agent().FakeRuntime()
	rt.SetRules([]fake.Rule{{Image: "logger", Behavior: fake.Behavior{Stdout: []string{"hello from the log"}, Stderr: []string{"and from stderr"}}}})
	rt.SetPortRules([]fake.PortRule{{Port: 7, Handler: fake.EchoPort}})
	pod := newPod("streams", "logger", "busybox")
	pod.Spec.Containers[1].Command = []string{"/bin/sh"}
	pod.Spec.Containers[1].Stdin = true
	require.NoError(t, e.p.CreatePod(ctx, pod))
	e.waitPod("streams", running)

	t.Run("exec", func(t *testing.T) {
		io := &attachIO{out: &buffer{}, errOut: &buffer{}}
		require.NoError(t, e.p.RunInContainer(ctx, "default", "streams", "c0", []string{"echo", "hello"}, io))
		assert.Equal(t, "hello\n", io.out.String())
	})
	t.Run("exec exit code", func(t *testing.T) {
		io := &attachIO{out: &buffer{}, errOut: &buffer{}}
		err := e.p.RunInContainer(ctx, "default", "streams", "c0", []string{"sh", "-c", "echo out; exit 3"}, io)
		var exit utilexec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 3, exit.ExitStatus())
		assert.Equal(t, "out\n", io.out.String())
	})
	t.Run("exec with a terminal", func(t *testing.T) {
		resize := make(chan api.TermSize, 1)
		resize <- api.TermSize{Width: 80, Height: 24}
		io := &attachIO{out: &buffer{}, tty: true, resize: resize}
		require.NoError(t, e.p.RunInContainer(ctx, "default", "streams", "c0", []string{"echo", "hi"}, io))
		assert.Equal(t, "hi\r\n", io.out.String())
	})
	t.Run("exec in a missing container", func(t *testing.T) {
		err := e.p.RunInContainer(ctx, "default", "streams", "nope", []string{"true"}, &attachIO{out: &buffer{}})
		assert.ErrorContains(t, err, `container not found ("nope")`)
	})
	t.Run("attach", func(t *testing.T) {
		io := &attachIO{in: strings.NewReader("echo attached\n"), out: &buffer{}, errOut: &buffer{}}
		require.NoError(t, e.p.AttachToContainer(ctx, "default", "streams", "c1", io))
		assert.Equal(t, "attached\n", io.out.String())
	})
	t.Run("logs", func(t *testing.T) {
		r, err := e.p.GetContainerLogs(ctx, "default", "streams", "c0", api.ContainerLogOpts{})
		require.NoError(t, err)
		defer r.Close()
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, "hello from the log\nand from stderr\n", string(b))

		r, err = e.p.GetContainerLogs(ctx, "default", "streams", "c0", api.ContainerLogOpts{Tail: 1, Timestamps: true})
		require.NoError(t, err)
		defer r.Close()
		b, err = io.ReadAll(r)
		require.NoError(t, err)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\S+ and from stderr\n$`, string(b))
	})
	t.Run("logs follow until the reader closes", func(t *testing.T) {
		r, err := e.p.GetContainerLogs(ctx, "default", "streams", "c0", api.ContainerLogOpts{Follow: true})
		require.NoError(t, err)
		line := make([]byte, len("hello from the log\n"))
		_, err = io.ReadFull(r, line)
		require.NoError(t, err)
		assert.Equal(t, "hello from the log\n", string(line))
		require.NoError(t, r.Close())
	})
	t.Run("logs of a container with none", func(t *testing.T) {
		_, err := e.p.GetContainerLogs(ctx, "default", "streams", "nope", api.ContainerLogOpts{Previous: true})
		assert.True(t, errdefs.IsInvalidInput(err), "%v", err)
	})
	t.Run("port-forward", func(t *testing.T) {
		client, server := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- e.p.PortForward(ctx, "default", "streams", 7, server) }()
		require.NoError(t, client.SetDeadline(time.Now().Add(wait)))
		_, err := io.WriteString(client, "ping")
		require.NoError(t, err)
		got := make([]byte, 4)
		_, err = io.ReadFull(client, got)
		require.NoError(t, err)
		assert.Equal(t, "ping", string(got))
		require.NoError(t, client.Close())
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(wait):
			t.Fatal("PortForward did not return")
		}
	})
	t.Run("port-forward to a closed port", func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		err := e.p.PortForward(ctx, "default", "streams", 8, server)
		assert.ErrorContains(t, err, "port 8")
	})
}

func TestStatsAndResourceMetrics(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	require.NoError(t, e.p.CreatePod(ctx, newPod("measured", "nginx:1.27")))
	e.waitPod("measured", running)

	s, err := e.p.GetStatsSummary(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no machine statistics here")
	}
	require.NoError(t, err)
	assert.Equal(t, nodeName, s.Node.NodeName)
	var names []string
	for _, p := range s.Pods {
		names = append(names, p.PodRef.Name)
	}
	assert.Contains(t, names, "measured")

	families, err := e.p.GetMetricsResource(ctx)
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pod"] != "" && labels["pod"] != "measured" {
				continue
			}
			got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	assert.Contains(t, got, "pod_cpu_usage_seconds_total")
	assert.Contains(t, got, "container_memory_working_set_bytes")
	assert.Equal(t, float64(0), got["resource_scrape_error"])
}
