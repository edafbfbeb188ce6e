package server_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/server"
)

// openAuth lets everyone do everything: the routes' tests are about the
// routes.
var openAuth = &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}}

// secure is a secure server over n, redirecting streams so that their
// routes answer without a runtime.
func secure(n *fakeNode, edit ...func(*server.Options)) *server.Server {
	o := server.Options{
		Node: nodeStatus{name: "node1"}, PodGetter: n, Logs: n, Streaming: n, Runner: n, Stats: n, RunningPods: n,
		Health: healthFunc(healthy), RedirectContainerStreaming: true, Auth: openAuth,
	}
	for _, e := range edit {
		e(&o)
	}
	return server.New(o)
}

type routeCase struct {
	name   string
	node   func(n *fakeNode) // edits the fake before the request
	opts   func(o *server.Options)
	method string // GET unless set
	path   string
	header http.Header
	body   string // a form body
	code   int
	want   string // the exact body, when set
	has    string // a part of the body, when set
	loc    string // the Location header, when set
	calls  []call // the node's calls, when set (nil: none checked; use empty for none)
	check  func(t *testing.T, rec *httptest.ResponseRecorder)
}

func runRoutes(t *testing.T, cases []routeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(webPod(), mirrorPod())
			if tc.node != nil {
				tc.node(n)
			}
			var edits []func(*server.Options)
			if tc.opts != nil {
				edits = append(edits, tc.opts)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(method, tc.path, body)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			secure(n, edits...).Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.want != "" {
				assert.Equal(t, tc.want, rec.Body.String())
			}
			if tc.has != "" {
				assert.Contains(t, rec.Body.String(), tc.has)
			}
			if tc.loc != "" {
				assert.Equal(t, tc.loc, rec.Header().Get("Location"))
			}
			switch {
			case tc.calls == nil:
			case len(tc.calls) == 0:
				assert.Empty(t, n.recorded())
			default:
				assert.Equal(t, tc.calls, n.recorded())
			}
			if tc.check != nil {
				tc.check(t, rec)
			}
		})
	}
}

func TestContainerLogs(t *testing.T) {
	since := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Local())
	logs := func(opts *v1.PodLogOptions, container string) []call {
		return []call{{Method: "ContainerLogs", Pod: "default/web", Container: container, Logs: opts}}
	}
	failWith := func(err error, written string) func(n *fakeNode) {
		return func(n *fakeNode) {
			n.logs = func(_ *v1.PodLogOptions, stdout, _ io.Writer) error {
				io.WriteString(stdout, written)
				return err
			}
		}
	}
	runRoutes(t, []routeCase{{
		name: "a container's log", path: "/containerLogs/default/web/app",
		code: http.StatusOK, want: "log of web/app\n", calls: logs(&v1.PodLogOptions{}, "app"),
	}, {
		name: "an init container's log", path: "/containerLogs/default/web/init",
		code: http.StatusOK, want: "log of web/init\n",
	}, {
		name: "the query decoded",
		path: "/containerLogs/default/web/app?follow=true&tailLines=10&timestamps=1&limitBytes=100&previous=false&insecureSkipTLSVerifyBackend=",
		code: http.StatusOK,
		calls: logs(&v1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](10), Timestamps: true, LimitBytes: ptr.To[int64](100),
			InsecureSkipTLSVerifyBackend: true}, "app"),
	}, {
		name: "sinceTime and sinceSeconds", path: "/containerLogs/default/web/app?sinceTime=2024-01-02T03:04:05Z&previous=1",
		code:  http.StatusOK,
		calls: logs(&v1.PodLogOptions{SinceTime: &since, Previous: true}, "app"),
	}, {
		name: "the legacy tail", path: "/containerLogs/default/web/app?tail=5&tailLines=7",
		code: http.StatusOK, calls: logs(&v1.PodLogOptions{TailLines: ptr.To[int64](5)}, "app"),
	}, {
		name: "tail=all is the whole log", path: "/containerLogs/default/web/app?tail=all&tailLines=7",
		code: http.StatusOK, calls: logs(&v1.PodLogOptions{}, "app"),
	}, {
		name: "stream All", path: "/containerLogs/default/web/app?stream=All",
		code: http.StatusOK, calls: logs(&v1.PodLogOptions{Stream: ptr.To(v1.LogStreamAll)}, "app"),
	}, {
		name: "both sinceSeconds and sinceTime", path: "/containerLogs/default/web/app?sinceSeconds=10&sinceTime=2024-01-02T03:04:05Z",
		code: http.StatusUnprocessableEntity, has: "at most one of `sinceTime` or `sinceSeconds` may be specified", calls: []call{},
	}, {
		name: "negative tailLines", path: "/containerLogs/default/web/app?tailLines=-1",
		code: http.StatusUnprocessableEntity, has: "tailLines: Invalid value: -1: must be greater than or equal to 0", calls: []call{},
	}, {
		name: "sinceSeconds of 0", path: "/containerLogs/default/web/app?sinceSeconds=0",
		code: http.StatusUnprocessableEntity, has: "sinceSeconds: Invalid value: 0: must be greater than 0",
	}, {
		name: "limitBytes of 0", path: "/containerLogs/default/web/app?limitBytes=0",
		code: http.StatusUnprocessableEntity, has: "limitBytes: Invalid value: 0: must be greater than 0",
	}, {
		name: "an unknown stream", path: "/containerLogs/default/web/app?stream=Both",
		code: http.StatusUnprocessableEntity, has: `stream: Unsupported value: "Both"`,
	}, {
		name: "a single stream", path: "/containerLogs/default/web/app?stream=Stdout",
		code: http.StatusBadRequest,
		want: `unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet`,
	}, {
		name: "tailLines not a number", path: "/containerLogs/default/web/app?tailLines=ten",
		code: http.StatusBadRequest, has: `Unable to decode query: tailLines: strconv.ParseInt: parsing "ten"`,
	}, {
		name: "sinceTime not RFC 3339", path: "/containerLogs/default/web/app?sinceTime=yesterday",
		code: http.StatusBadRequest, has: "Unable to decode query: sinceTime: ",
	}, {
		name: "no such pod", path: "/containerLogs/default/nope/app",
		code: http.StatusNotFound, want: `pod "nope" does not exist`,
	}, {
		name: "no such container", path: "/containerLogs/default/web/db",
		code: http.StatusNotFound, want: `container "db" not found in pod "web"`, calls: []call{},
	}, {
		name: "an empty podID", path: "/containerLogs/default//app",
		code: http.StatusBadRequest, want: `{"message": "Missing podID."}`,
	}, {
		name: "an encoded slash in the pod's name", path: "/containerLogs/default/we%2Fb/app",
		code: http.StatusNotFound, want: `invalid podID "we/b": may not contain '/'`,
	}, {
		name: "a dot-dot container", path: "/containerLogs/default/web/%2E%2E",
		code: http.StatusNotFound, want: `invalid containerName "..": may not be '..'`,
	}, {
		name: "too few segments", path: "/containerLogs/default/web", code: http.StatusNotFound,
	}, {
		name: "POST", method: http.MethodPost, path: "/containerLogs/default/web/app", code: http.StatusMethodNotAllowed,
	}, {
		name: "the logger finds no container", path: "/containerLogs/default/web/app",
		node: failWith(fmt.Errorf("container app: %w", server.ErrNotFound), ""),
		code: http.StatusNotFound, want: "container app: not found",
	}, {
		name: "the logger refuses the options", path: "/containerLogs/default/web/app",
		node: failWith(fmt.Errorf("previous terminated container \"app\" not found: %w", server.ErrBadRequest), ""),
		code: http.StatusBadRequest, want: "previous terminated container \"app\" not found: bad request",
	}, {
		name: "the logger fails", path: "/containerLogs/default/web/app",
		node: failWith(errors.New("open /var/log/pods/x: permission denied"), ""),
		code: http.StatusInternalServerError, want: "open /var/log/pods/x: permission denied",
	}, {
		name: "the logger fails after writing", path: "/containerLogs/default/web/app",
		node: failWith(errors.New("rotated away"), "line 1\n"),
		code: http.StatusOK, want: "line 1\n",
	}, {
		name: "no logger", path: "/containerLogs/default/web/app", opts: func(o *server.Options) { o.Logs = nil },
		code: http.StatusServiceUnavailable, want: "no container logger\n",
	}})
}

// A followed log reaches the client as it is written, not when the
// handler returns.
func TestContainerLogsFlushesAsWritten(t *testing.T) {
	n := newFakeNode(webPod())
	lines := make(chan string)
	n.logs = func(opts *v1.PodLogOptions, stdout, _ io.Writer) error {
		for l := range lines {
			io.WriteString(stdout, l)
		}
		return nil
	}
	ts := httptest.NewServer(secure(n).Handler())
	defer ts.Close()
	// The status and headers go with the first line: until then the log
	// may still fail with a status of its own.
	go func() { lines <- "first\n" }()
	resp, err := ts.Client().Get(ts.URL + "/containerLogs/default/web/app?follow=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	buf := make([]byte, 64)
	for i, l := range []string{"first\n", "second\n"} {
		if i > 0 {
			lines <- l
		}
		// The read returns once the line is flushed, while the handler
		// still waits for the next.
		k, err := resp.Body.Read(buf)
		require.NoError(t, err)
		assert.Equal(t, l, string(buf[:k]))
	}
	close(lines)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Empty(t, rest)
}

func TestExecAttachPortForward(t *testing.T) {
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	streamErr := func(err error) func(n *fakeNode) {
		return func(n *fakeNode) { n.stream = func(string) (*url.URL, error) { return nil, err } }
	}
	runRoutes(t, []routeCase{{
		name: "exec", path: "/exec/default/web/app?command=ls&command=-l&output=1&error=1", header: spdy,
		code: http.StatusFound, loc: "http://127.0.0.1:1/exec/token",
		calls: []call{{Method: "Exec", Pod: "default/web", Container: "app", Cmd: []string{"ls", "-l"},
			Stream: server.StreamOptions{Stdout: true, Stderr: true}}},
	}, {
		name: "exec by POST with the streams in the form", method: http.MethodPost, path: "/exec/default/web/app?command=sh",
		body: "input=1&tty=1", code: http.StatusFound,
		calls: []call{{Method: "Exec", Pod: "default/web", Container: "app", Cmd: []string{"sh"},
			Stream: server.StreamOptions{Stdin: true, TTY: true}}},
	}, {
		name: "exec with a tty drops stderr", path: "/exec/default/web/app?command=sh&input=1&output=1&error=1&tty=1",
		code: http.StatusFound,
		calls: []call{{Method: "Exec", Pod: "default/web", Container: "app", Cmd: []string{"sh"},
			Stream: server.StreamOptions{Stdin: true, Stdout: true, TTY: true}}},
	}, {
		name: "exec streams are on only for 1", path: "/exec/default/web/app?command=sh&input=true&output=yes",
		code: http.StatusBadRequest, want: "you must specify at least 1 of stdin, stdout, stderr", calls: []call{},
	}, {
		name: "exec with only stderr and a tty", path: "/exec/default/web/app?command=sh&error=1&tty=1",
		code: http.StatusBadRequest, want: "you must specify at least 1 of stdin, stdout, stderr",
	}, {
		name: "exec with the pod's UID", path: "/exec/default/web/uid-web/app?command=ls&output=1", code: http.StatusFound,
		calls: []call{{Method: "Exec", Pod: "default/web", Container: "app", Cmd: []string{"ls"}, Stream: server.StreamOptions{Stdout: true}}},
	}, {
		name: "exec with another UID", path: "/exec/default/web/uid-old/app?command=ls&output=1",
		code: http.StatusNotFound, want: "pod not found", calls: []call{},
	}, {
		name: "exec into a mirror pod by its static pod's UID", path: "/exec/kube-system/etcd-node1/uid-static/etcd?command=ls&output=1",
		code: http.StatusFound,
	}, {
		name: "exec into no such pod", path: "/exec/default/nope/app?command=ls&output=1",
		code: http.StatusNotFound, want: "pod does not exist",
	}, {
		name: "exec with an encoded slash", path: "/exec/default/web/a%2Fpp?command=ls&output=1",
		code: http.StatusNotFound, want: `invalid containerName "a/pp": may not contain '/'`,
	}, {
		name: "exec without a container", path: "/exec/default/web?command=ls&output=1", code: http.StatusNotFound,
	}, {
		name: "exec by DELETE", method: http.MethodDelete, path: "/exec/default/web/app?output=1", code: http.StatusMethodNotAllowed,
	}, {
		name: "exec into no running container", path: "/exec/default/web/app?command=ls&output=1",
		node: streamErr(fmt.Errorf("container %q: %w", "app", server.ErrNotFound)),
		code: http.StatusNotFound, want: `container "app": not found`,
	}, {
		name: "exec refused by the runtime", path: "/exec/default/web/app?output=1",
		node: streamErr(grpcstatus.Error(codes.InvalidArgument, "cmd must not be empty")),
		code: http.StatusBadRequest, has: "cmd must not be empty",
	}, {
		name: "exec, the runtime's streaming server full", path: "/exec/default/web/app?command=ls&output=1",
		node: streamErr(grpcstatus.Error(codes.ResourceExhausted, "maximum number of in-flight requests exceeded")),
		code: http.StatusTooManyRequests, has: "maximum number of in-flight requests exceeded",
		check: func(t *testing.T, rec *httptest.ResponseRecorder) {
			assert.Equal(t, "60", rec.Header().Get("Retry-After"))
		},
	}, {
		name: "exec, the runtime fails", path: "/exec/default/web/app?command=ls&output=1",
		node: streamErr(errors.New("connection refused")), code: http.StatusInternalServerError, want: "connection refused",
	}, {
		name: "exec without a streamer", path: "/exec/default/web/app?command=ls&output=1",
		opts: func(o *server.Options) { o.Streaming = nil }, code: http.StatusServiceUnavailable,
	}, {
		name: "exec without a pod getter", path: "/exec/default/web/app?command=ls&output=1",
		opts: func(o *server.Options) { o.PodGetter = nil }, code: http.StatusServiceUnavailable,
	}, {
		name: "attach", method: http.MethodPost, path: "/attach/default/web/sidecar?output=1&input=1", header: spdy,
		code: http.StatusFound, loc: "http://127.0.0.1:1/attach/token",
		calls: []call{{Method: "Attach", Pod: "default/web", Container: "sidecar", Stream: server.StreamOptions{Stdin: true, Stdout: true}}},
	}, {
		name: "attach without streams", path: "/attach/default/web/app", code: http.StatusBadRequest,
		want: "you must specify at least 1 of stdin, stdout, stderr",
	}, {
		name: "attach with another UID", path: "/attach/default/web/uid-old/app?output=1", code: http.StatusNotFound, want: "pod not found",
	}, {
		name: "port forward over SPDY: the ports come in the streams", path: "/portForward/default/web?port=80", header: spdy,
		code: http.StatusFound, loc: "http://127.0.0.1:1/portforward/token",
		calls: []call{{Method: "PortForward", Pod: "default/web"}},
	}, {
		name: "port forward over a WebSocket: the ports in the query", path: "/portForward/default/web/uid-web?port=80&port=8080,9090",
		header: ws, code: http.StatusFound,
		calls: []call{{Method: "PortForward", Pod: "default/web", Ports: []int32{80, 8080, 9090}}},
	}, {
		name: "port forward over a WebSocket without a port", path: "/portForward/default/web", header: ws,
		code: http.StatusBadRequest, want: `query parameter "port" is required`,
	}, {
		name: "port forward over a WebSocket to an empty port", path: "/portForward/default/web?port=", header: ws,
		code: http.StatusBadRequest, want: `query parameter "port" cannot be empty`,
	}, {
		name: "port forward over a WebSocket to port 0", path: "/portForward/default/web?port=0", header: ws,
		code: http.StatusBadRequest, want: `port "0" must be > 0`,
	}, {
		name: "port forward over a WebSocket to no port", path: "/portForward/default/web?port=80,http", header: ws,
		code: http.StatusBadRequest, has: `unable to parse "80,http" as a port`,
	}, {
		name: "port forward with another UID", path: "/portForward/default/web/uid-old", header: spdy,
		code: http.StatusNotFound, want: "pod not found",
	}, {
		name: "port forward with a container", path: "/portForward/default/web/uid-web/app", code: http.StatusNotFound,
	}})
}

func TestRun(t *testing.T) {
	runRoutes(t, []routeCase{{
		name: "run", method: http.MethodPost, path: "/run/default/web/app?cmd=echo%20hi", code: http.StatusOK, want: "ran\n",
		calls: []call{{Method: "RunInContainer", Pod: "default/web", Container: "app", Cmd: []string{"echo", "hi"}}},
		check: func(t *testing.T, rec *httptest.ResponseRecorder) {
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		},
	}, {
		name: "run with the pod's UID", method: http.MethodPost, path: "/run/default/web/uid-web/app?cmd=true", code: http.StatusOK,
	}, {
		name: "run with another UID", method: http.MethodPost, path: "/run/default/web/uid-old/app?cmd=true",
		code: http.StatusNotFound, want: "pod not found", calls: []call{},
	}, {
		name: "run in no such pod", method: http.MethodPost, path: "/run/default/nope/app?cmd=true",
		code: http.StatusNotFound, want: "pod does not exist",
	}, {
		name: "run by GET", path: "/run/default/web/app?cmd=true", code: http.StatusMethodNotAllowed,
	}, {
		name: "run, no output", method: http.MethodPost, path: "/run/default/web/app?cmd=true",
		node: func(n *fakeNode) { n.run = func([]string) ([]byte, error) { return nil, nil } },
		code: http.StatusOK, want: "",
	}, {
		name: "run fails", method: http.MethodPost, path: "/run/default/web/app?cmd=false",
		node: func(n *fakeNode) {
			n.run = func([]string) ([]byte, error) { return nil, errors.New("command terminated with exit code 1") }
		},
		code: http.StatusInternalServerError, want: "command terminated with exit code 1",
	}, {
		name: "run without a runner", method: http.MethodPost, path: "/run/default/web/app?cmd=true",
		opts: func(o *server.Options) { o.Runner = nil }, code: http.StatusServiceUnavailable,
	}})
}

func TestStatsAndRunningPods(t *testing.T) {
	summary := func(node string) func(t *testing.T, rec *httptest.ResponseRecorder) {
		return func(t *testing.T, rec *httptest.ResponseRecorder) {
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var s statsv1alpha1.Summary
			require.NoError(t, jsonUnmarshal(rec.Body.Bytes(), &s))
			assert.Equal(t, node, s.Node.NodeName)
		}
	}
	runRoutes(t, []routeCase{{
		name: "summary", path: "/stats/summary", code: http.StatusOK,
		calls: []call{{Method: "Summary"}}, check: summary("node1"),
	}, {
		name: "summary of CPU and memory", path: "/stats/summary?only_cpu_and_memory=true", code: http.StatusOK,
		calls: []call{{Method: "Summary", Only: true}},
	}, {
		name: "summary of CPU and memory, asked in a form", method: http.MethodPost, path: "/stats/summary",
		body: "only_cpu_and_memory=true", code: http.StatusOK, calls: []call{{Method: "Summary", Only: true}},
	}, {
		name: "only_cpu_and_memory must be true", path: "/stats/summary?only_cpu_and_memory=1", code: http.StatusOK,
		calls: []call{{Method: "Summary"}},
	}, {
		name: "summary fails", path: "/stats/summary",
		node: func(n *fakeNode) {
			n.summary = func(bool) (*statsv1alpha1.Summary, error) { return nil, errors.New("no cgroup stats") }
		},
		code: http.StatusInternalServerError, want: "Internal Error: no cgroup stats",
	}, {
		name: "summary without a provider", path: "/stats/summary", opts: func(o *server.Options) { o.Stats = nil },
		code: http.StatusServiceUnavailable, want: "no stats provider\n",
	}, {
		name: "summary by PUT", method: http.MethodPut, path: "/stats/summary", code: http.StatusMethodNotAllowed,
	}, {
		name: "running pods", path: "/runningpods/",
		node: func(n *fakeNode) { n.running = []v1.Pod{*webPod()} },
		code: http.StatusOK, calls: []call{{Method: "RunningPods"}},
		check: func(t *testing.T, rec *httptest.ResponseRecorder) {
			var list v1.PodList
			require.NoError(t, jsonUnmarshal(rec.Body.Bytes(), &list))
			assert.Equal(t, metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, list.TypeMeta)
			require.Len(t, list.Items, 1)
			assert.Equal(t, "web", list.Items[0].Name)
		},
	}, {
		name: "running pods fails", path: "/runningpods/",
		node: func(n *fakeNode) { n.runErr = errors.New("runtime down") },
		code: http.StatusInternalServerError, want: "runtime down",
	}, {
		name: "resource metrics", path: "/metrics/resource",
		opts: func(o *server.Options) {
			o.ResourceMetrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "node_cpu_usage_seconds_total 1\n") })
		},
		code: http.StatusOK, want: "node_cpu_usage_seconds_total 1\n",
	}, {
		name: "no resource metrics", path: "/metrics/resource", code: http.StatusNotFound,
	}, {
		name: "an unknown path", path: "/spec/", code: http.StatusNotFound,
	}})
}

func TestHealthz(t *testing.T) {
	failing := func(o *server.Options) {
		o.Health = healthFunc(func() error { return errors.New("sync loop stuck for 3m") })
		o.Checks = []server.HealthCheck{{Name: "pleg", Check: func(*http.Request) error { return nil }}}
	}
	withChecks := func(o *server.Options) {
		o.Checks = []server.HealthCheck{
			{Name: "pleg", Check: func(*http.Request) error { return nil }},
			{Name: "ping", Check: func(*http.Request) error { return errors.New("never run: ping is taken") }},
			{Name: "nil"},
		}
	}
	withDetail := func(o *server.Options) {
		o.Checks = []server.HealthCheck{
			{Name: "apisource", Check: func(*http.Request) error { return nil }, Detail: func() string { return "serving 3 pods\nfrom the local state" }},
			{Name: "quiet", Check: func(*http.Request) error { return nil }, Detail: func() string { return "" }},
		}
	}
	runRoutes(t, []routeCase{{
		name: "healthy", path: "/healthz", code: http.StatusOK, want: "ok",
		check: func(t *testing.T, rec *httptest.ResponseRecorder) {
			assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
		},
	}, {
		name: "healthy, verbose", path: "/healthz?verbose", opts: withChecks, code: http.StatusOK,
		want: "[+]ping ok\n[+]syncloop ok\n[+]pleg ok\nhealthz check passed\n",
	}, {
		name: "a check excluded", path: "/healthz?verbose&exclude=pleg&exclude=etcd", opts: withChecks, code: http.StatusOK,
		want: "[+]ping ok\n[+]syncloop ok\n[+]pleg excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"etcd\"\nhealthz check passed\n",
	}, {
		name: "failing: the reason withheld", path: "/healthz", opts: failing, code: http.StatusInternalServerError,
		want: "[+]ping ok\n[-]syncloop failed: reason withheld\n[+]pleg ok\nhealthz check failed\n",
	}, {
		name: "failing, excluded", path: "/healthz?exclude=syncloop", opts: failing, code: http.StatusOK, want: "ok",
	}, {
		name: "one check", path: "/healthz/ping", code: http.StatusOK, want: "ok",
	}, {
		name: "one failing check gives its reason", path: "/healthz/syncloop", opts: failing,
		code: http.StatusInternalServerError, want: "internal server error: sync loop stuck for 3m\n",
	}, {
		name: "an unknown check", path: "/healthz/etcd", code: http.StatusNotFound,
	}, {
		name: "a passing check's detail, verbose only", path: "/healthz?verbose", opts: withDetail, code: http.StatusOK,
		want: "[+]ping ok\n[+]syncloop ok\n[+]apisource ok: serving 3 pods from the local state\n[+]quiet ok\nhealthz check passed\n",
	}, {
		name: "a detail changes no answer", path: "/healthz/apisource", opts: withDetail, code: http.StatusOK, want: "ok",
	}, {
		name: "no checker: ping alone", path: "/healthz?verbose", opts: func(o *server.Options) { o.Health = nil },
		code: http.StatusOK, want: "[+]ping ok\nhealthz check passed\n",
	}})
}
