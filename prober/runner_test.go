package prober_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/prober"
)

func hostPort(t *testing.T, addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, n
}

func TestHTTPProbe(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer other.Close()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte("fine"))
		case "/hdr":
			if r.Header.Get("X-Probe") != "yes" || !strings.HasPrefix(r.UserAgent(), "kube-probe/") {
				w.WriteHeader(400)
			}
		case "/bad":
			w.WriteHeader(503)
		case "/redir-same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/redir-other":
			http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusFound)
		case "/huge":
			chunk := []byte(strings.Repeat("x", 1<<16))
			for range 160 { // 10 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/hang":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(block)
	host, port := hostPort(t, srv.Listener.Addr().String())
	r := prober.NewRunner(prober.RunnerOptions{})
	defer r.Close()
	container := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	cases := []struct {
		name    string
		path    string
		port    intstr.IntOrString
		headers []v1.HTTPHeader
		want    prober.Result
		output  string
		warning bool
	}{
		{name: "2xx", path: "/ok", want: prober.Success, output: "fine"},
		{name: "named port", path: "/ok", port: intstr.FromString("http"), want: prober.Success},
		{name: "missing named port", path: "/ok", port: intstr.FromString("nope"), want: prober.Failure, output: `port name "nope" not found in container "app"`},
		{name: "headers", path: "/hdr", headers: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}, want: prober.Success},
		{name: "headers missing", path: "/hdr", want: prober.Failure, output: "HTTP probe failed with statuscode: 400"},
		{name: "5xx", path: "/bad", want: prober.Failure, output: "HTTP probe failed with statuscode: 503"},
		{name: "redirect same host", path: "/redir-same", want: prober.Success, output: "fine"},
		{name: "redirect other host", path: "/redir-other", want: prober.Success, warning: true},
		{name: "hang", path: "/hang", want: prober.Failure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.port
			if p.Type == intstr.Int && p.IntVal == 0 {
				p = intstr.FromInt32(int32(port))
			}
			out, err := r.Probe(t.Context(), prober.Target{PodIP: host, Container: container, Probe: &v1.Probe{
				TimeoutSeconds: 1,
				ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: tc.path, Port: p, HTTPHeaders: tc.headers}}}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, out.Output)
			if tc.output != "" {
				assert.Equal(t, tc.output, out.Output)
			}
			assert.Equal(t, tc.warning, out.Warning != "", out.Warning)
		})
	}
	t.Run("huge body is bounded", func(t *testing.T) {
		out, err := r.Probe(t.Context(), prober.Target{PodIP: host, Probe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/huge", Port: intstr.FromInt32(int32(port))}}}})
		require.NoError(t, err)
		assert.Equal(t, prober.Success, out.Result)
		assert.Len(t, out.Output, prober.MaxOutput)
	})
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host, port := hostPort(t, ln.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, closedPort := hostPort(t, closed.Addr().String())
	require.NoError(t, closed.Close())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer func() { _ = ln.Close(); <-done }()
	r := prober.NewRunner(prober.RunnerOptions{})
	container := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "db", ContainerPort: int32(port)}}}
	cases := []struct {
		name string
		port intstr.IntOrString
		want prober.Result
	}{
		{"open", intstr.FromInt32(int32(port)), prober.Success},
		{"named", intstr.FromString("db"), prober.Success},
		{"closed", intstr.FromInt32(int32(closedPort)), prober.Failure},
		{"unknown name", intstr.FromString("web"), prober.Failure},
		{"out of range", intstr.FromInt32(70000), prober.Failure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Probe(t.Context(), prober.Target{PodIP: host, Container: container, Probe: &v1.Probe{
				ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: tc.port}}}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, out.Output)
		})
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host, port := hostPort(t, ln.Addr().String())
	hs := health.NewServer()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	defer func() { srv.Stop(); <-done }()
	r := prober.NewRunner(prober.RunnerOptions{})
	str := func(s string) *string { return &s }
	cases := []struct {
		name    string
		service *string
		want    prober.Result
		output  string
	}{
		{"overall", nil, prober.Success, ""},
		{"not serving", str("db"), prober.Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", str("nope"), prober.Failure, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Probe(t.Context(), prober.Target{PodIP: host, Probe: &v1.Probe{
				ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: tc.service}}}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, out.Output)
			if tc.output != "" {
				assert.Equal(t, tc.output, out.Output)
			}
		})
	}
}

func TestExecProbe(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox"}, ExecRules: []fake.ExecRule{
		{Command: []string{"check"}, Stdout: "ok\n"},
		{Command: []string{"broken"}, Stderr: "no\n", ExitCode: 2},
		{Command: []string{"hang"}, Duration: time.Hour},
	}})
	defer rt.Close()
	ctx := t.Context()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, sbCfg)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))
	r := prober.NewRunner(prober.RunnerOptions{Execer: rt})
	run := func(ctx context.Context, cmd ...string) (prober.Outcome, error) {
		return r.Probe(ctx, prober.Target{ContainerID: id, Probe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}})
	}
	t.Run("success", func(t *testing.T) {
		out, err := run(t.Context(), "check")
		require.NoError(t, err)
		assert.Equal(t, prober.Outcome{Result: prober.Success, Output: "ok\n"}, out)
	})
	t.Run("failure", func(t *testing.T) {
		out, err := run(t.Context(), "broken")
		require.NoError(t, err)
		assert.Equal(t, prober.Outcome{Result: prober.Failure, Output: "no\n"}, out)
	})
	t.Run("hang is cut at the timeout", func(t *testing.T) {
		type res struct {
			out prober.Outcome
			err error
		}
		ch := make(chan res, 1)
		go func() { o, e := run(context.Background(), "hang"); ch <- res{o, e} }()
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			require.True(t, time.Now().Before(deadline), "exec never parked on the clock")
			runtimeGosched()
		}
		clk.Step(time.Second)
		got := <-ch
		require.NoError(t, got.err)
		assert.Equal(t, prober.Failure, got.out.Result)
		assert.Contains(t, got.out.Output, "timed out")
	})
	t.Run("no execer", func(t *testing.T) {
		_, err := prober.NewRunner(prober.RunnerOptions{}).Probe(t.Context(), prober.Target{Probe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}}})
		require.ErrorIs(t, err, prober.ErrNoExecer)
	})
}
