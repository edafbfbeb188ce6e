package podsync_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// hookServer is an HTTP server answering code to every request; it returns
// its host and port and counts the requests.
func hookServer(t *testing.T, code int) (host string, port int, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	h, p, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	return h, mustAtoi(t, p), hits
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func TestPostStartHook(t *testing.T) {
	okHost, okPort, _ := hookServer(t, http.StatusInternalServerError)
	refused := closedPort(t)
	const podRef = "web_default(uid-1)"
	tests := []struct {
		name string
		hook v1.LifecycleHandler
		rule *fake.ExecRule
		// wantMsg is the waiting message; empty means the hook succeeds.
		wantMsg string
	}{
		{
			name: "exec succeeds",
			hook: v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "touch /ready"}}},
		},
		{
			name: "exec exits non-zero: its output is in the message",
			hook: v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "exit 3"}}},
			rule: &fake.ExecRule{Command: []string{"sh", "-c", "exit 3"}, Stdout: "out\n", Stderr: "boom\n", ExitCode: 3},
			wantMsg: `Exec lifecycle hook ([sh -c exit 3]) for Container "app" in Pod "` + podRef +
				`" failed - error: command 'sh -c exit 3' exited with 3: boom` + "\n" + `, message: "out\nboom\n"`,
		},
		{
			name: "HTTP answered, even with 500, succeeds as upstream's",
			hook: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: okHost, Port: intstr.FromInt32(int32(okPort)), Path: "/started"}},
		},
		{
			name: "HTTP refused",
			hook: v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(refused)), Path: "/started"}},
			wantMsg: fmt.Sprintf(`HTTP lifecycle hook (/started) for Container "app" in Pod "%s" failed - error: Get "http://127.0.0.1:%d/started": dial tcp 127.0.0.1:%d: connect: connection refused`,
				podRef, refused, refused),
		},
		{
			name:    "HTTP named port the container lacks",
			hook:    v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromString("admin"), Path: "/"}},
			wantMsg: `HTTP lifecycle hook (/) for Container "app" in Pod "` + podRef + `" failed - error: port admin not found`,
		},
		{
			name:    "handler without an action",
			hook:    v1.LifecycleHandler{},
			wantMsg: "Cannot run handler: invalid handler: &LifecycleHandler{Exec:nil,HTTPGet:nil,TCPSocket:nil,Sleep:nil,}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.rule != nil {
				h.rt.SetExecRules([]fake.ExecRule{*tt.rule})
			}
			c := ctr("app")
			hook := tt.hook
			c.Lifecycle = &v1.Lifecycle{PostStart: &hook}
			pod := newPod(v1.RestartPolicyAlways, nil, c)
			res := h.sync(pod)
			s := step(t, res, "app")
			require.NotEmpty(t, s.ContainerID, "the container was created and started before its hook ran")
			events := h.rec.Strings()
			w, waiting := h.s.WaitingReason(pod.UID, "app")
			if tt.wantMsg == "" {
				require.NoError(t, res.Err())
				assert.False(t, waiting)
				assert.Empty(t, h.rt.CallsOf(fake.StopContainer))
				assert.Equal(t, running, h.status(pod).ContainerByName("app").GetState())
				return
			}
			require.ErrorIs(t, s.Err, podsync.ErrPostStartHook)
			assert.Equal(t, podsync.ReasonPostStartHookError, s.Reason)
			assert.Equal(t, tt.wantMsg, s.Message)
			require.True(t, waiting)
			assert.Equal(t, v1.ContainerStateWaiting{Reason: "PostStartHookError", Message: tt.wantMsg}, w)
			// The event says only that the hook failed, never its output.
			assert.Contains(t, events, "Warning FailedPostStartHook PostStartHook failed")
			assert.Contains(t, events, "Normal Killing FailedPostStartHook")
			stops := h.rt.CallsOf(fake.StopContainer)
			require.Len(t, stops, 1)
			assert.Equal(t, s.ContainerID, stops[0].Request.(*runtimeapi.StopContainerRequest).GetContainerId())
			assert.Equal(t, podsync.DefaultTerminationGracePeriod, stops[0].Request.(*runtimeapi.StopContainerRequest).GetTimeout())
			assert.Equal(t, exited, h.status(pod).ContainerByName("app").GetState())
		})
	}
}

func TestPostStartHookFailureRunsPreStopAndRestarts(t *testing.T) {
	h := newHarness(t)
	c := ctr("app")
	c.Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}},
		PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}},
	}
	grace := int64(5)
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	require.ErrorIs(t, h.sync(pod).Err(), podsync.ErrPostStartHook)
	var cmds [][]string
	for _, call := range h.rt.CallsOf(fake.ExecSync) {
		cmds = append(cmds, call.Request.(*runtimeapi.ExecSyncRequest).GetCmd())
	}
	assert.Equal(t, [][]string{{"false"}, {"/bin/drain"}}, cmds, "the kill runs the preStop hook")
	stops := h.rt.CallsOf(fake.StopContainer)
	require.Len(t, stops, 1)
	assert.Equal(t, int64(5), stops[0].Request.(*runtimeapi.StopContainerRequest).GetTimeout())

	// The first restart is at once; the hook fails again; the next restart
	// backs off, as for any container that keeps dying.
	res := h.sync(pod)
	require.ErrorIs(t, res.Err(), podsync.ErrPostStartHook)
	assert.Equal(t, "1", h.status(pod).ContainerByName("app").GetAnnotations()[cri.ContainerRestartCountAnnotation])
	res = h.sync(pod)
	require.ErrorIs(t, res.Err(), podsync.ErrCrashLoopBackOff)
	w, _ := h.s.WaitingReason(pod.UID, "app")
	assert.Equal(t, podsync.ReasonCrashLoopBackOff, w.Reason)
}

func TestPostStartSleepHookBlocksTheStartUntilItEnds(t *testing.T) {
	h := newHarness(t)
	c := ctr("app")
	c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	st := h.status(pod)
	done := make(chan podsync.Result, 1)
	go func() { done <- h.s.SyncPod(context.Background(), pod, st) }()
	require.Eventually(t, func() bool { return h.clk.HasWaiters() && len(h.rt.CallsOf(fake.StartContainer)) == 1 }, 10*time.Second, time.Millisecond)
	h.clk.Step(4 * time.Second)
	select {
	case <-done:
		t.Fatal("SyncPod returned before the sleep hook ended")
	default:
	}
	h.clk.Step(time.Second)
	select {
	case res := <-done:
		require.NoError(t, res.Err())
	case <-time.After(10 * time.Second):
		t.Fatal("SyncPod did not return once the sleep hook ended")
	}

	// A sleep cut short by the sync's context fails the hook.
	h2 := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st2 := h2.status(pod)
	done = make(chan podsync.Result, 1)
	go func() { done <- h2.s.SyncPod(ctx, pod, st2) }()
	require.Eventually(t, h2.clk.HasWaiters, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case res := <-done:
		require.ErrorIs(t, res.Err(), podsync.ErrPostStartHook)
		assert.Equal(t, `Sleep lifecycle hook (5) for Container "app" in Pod "web_default(uid-1)" failed - error: container terminated before sleep hook finished`,
			step(t, res, "app").Message)
	case <-time.After(10 * time.Second):
		t.Fatal("SyncPod did not return once its context ended")
	}
}

func TestPostStartHTTPHookClient(t *testing.T) {
	plainHost, plainPort, plainHits := hookServer(t, http.StatusOK)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	tlsURL, err := url.Parse(tlsSrv.URL)
	require.NoError(t, err)
	tlsHost, tlsPort, err := net.SplitHostPort(tlsURL.Host)
	require.NoError(t, err)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Another host, which nothing answers: taken as the answer.
		http.Redirect(w, r, "http://203.0.113.1:1/elsewhere", http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	redirectURL, err := url.Parse(redirect.URL)
	require.NoError(t, err)
	redirectHost, redirectPort, err := net.SplitHostPort(redirectURL.Host)
	require.NoError(t, err)

	tests := []struct {
		name      string
		get       v1.HTTPGetAction
		wantEvent string
	}{
		{"HTTPS with a certificate nothing can verify", v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: tlsHost, Port: intstr.FromInt32(int32(mustAtoi(t, tlsPort)))}, ""},
		{"HTTPS answered in HTTP is sent again over HTTP", v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: plainHost, Port: intstr.FromInt32(int32(plainPort))},
			fmt.Sprintf("Warning LifecycleHTTPFallback request to HTTPS lifecycle hook %s:%d got HTTP response, retry with HTTP succeeded", plainHost, plainPort)},
		{"a redirect to another host is the answer", v1.HTTPGetAction{Host: redirectHost, Port: intstr.FromInt32(int32(mustAtoi(t, redirectPort)))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			c := ctr("app")
			get := tt.get
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &get}}
			require.NoError(t, h.sync(newPod(v1.RestartPolicyAlways, nil, c)).Err())
			if tt.wantEvent != "" {
				assert.Contains(t, h.rec.Strings(), tt.wantEvent)
			}
		})
	}
	assert.Positive(t, plainHits.Load(), "the fallback reached the HTTP server")
}

// recordingTransport answers every request with its status and records it.
type recordingTransport struct {
	status int
	got    []string
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Method+" "+req.URL.String())
	return &http.Response{StatusCode: r.status, Body: http.NoBody, Request: req}, nil
}

// Options.HookTransport carries a Syncer's HTTP hooks: a test sees them
// without a server. As upstream's, a hook that got an answer succeeded,
// whatever its status code.
func TestHookTransport(t *testing.T) {
	for _, tc := range []struct {
		status  int
		wantErr bool
	}{{http.StatusOK, false}, {http.StatusInternalServerError, false}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}})
			t.Cleanup(rt.Close)
			tr := &recordingTransport{status: tc.status}
			s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, HookTransport: tr,
				Config: containerconfig.Options{LogRoot: t.TempDir(), NodeName: "node-1", HostIPs: []string{"192.168.1.10"}}})
			require.NoError(t, err)
			c := ctr("app")
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Host: "10.0.0.9", Port: intstr.FromInt32(8080)}}}
			pod := newPod(v1.RestartPolicyAlways, nil, c)
			res := s.SyncPod(context.Background(), pod, nil)
			assert.Equal(t, []string{"GET http://10.0.0.9:8080/started"}, tr.got)
			assert.Equal(t, tc.wantErr, step(t, res, "app").Err != nil, "%v", res.Err())
		})
	}
}
