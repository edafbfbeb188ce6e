package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/server"
)

// podList is a fixed list of pods.
type podList []v1.Pod

var _ server.PodLister = podList(nil)

func (l podList) PodStatuses() []v1.Pod { return l }

// nodeStatus is a node with a fixed status; nil status means none built
// yet.
type nodeStatus struct {
	name   string
	status *v1.NodeStatus
}

var _ server.NodeStatusGetter = nodeStatus{}

func (n nodeStatus) NodeName() string { return n.name }

func (n nodeStatus) NodeStatus() (v1.NodeStatus, bool) {
	if n.status == nil {
		return v1.NodeStatus{}, false
	}
	return *n.status, true
}

// healthFunc adapts a function to HealthChecker.
type healthFunc func() error

var _ server.HealthChecker = healthFunc(nil)

func (f healthFunc) Healthy() error { return f() }

func healthy() error { return nil }

func pod(name string, phase v1.PodPhase) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Status: v1.PodStatus{Phase: phase}}
}

var ready = &v1.NodeStatus{
	Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}},
	Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}},
}

func TestEndpoints(t *testing.T) {
	full := server.Options{
		Pods:   podList{pod("a", v1.PodRunning), pod("b", v1.PodPending)},
		Node:   nodeStatus{name: "node1", status: ready},
		Health: healthFunc(healthy),
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, "up 1\n")
	})
	with := func(edit func(*server.Options)) server.Options {
		o := full
		edit(&o)
		return o
	}
	for _, tc := range []struct {
		name        string
		opts        server.Options
		method      string // GET unless set
		path        string
		code        int
		contentType string
		body        string // exact, when set
		check       func(t *testing.T, body []byte)
	}{{
		name: "healthz ok", opts: full, path: "/healthz",
		code: http.StatusOK, contentType: "text/plain; charset=utf-8", body: "ok",
	}, {
		name: "healthz failing withholds the reasons",
		opts: with(func(o *server.Options) {
			o.Health = healthFunc(func() error {
				return errors.New("[-]pleg failed: pleg was last seen active 4m0s ago\n[-]syncloop failed: stuck")
			})
		}),
		path: "/healthz", code: http.StatusInternalServerError, contentType: "text/plain; charset=utf-8",
		body: "[+]ping ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n",
	}, {
		name: "healthz's check gives its reasons",
		opts: with(func(o *server.Options) {
			o.Health = healthFunc(func() error { return errors.New("[-]pleg failed: pleg was last seen active 4m0s ago") })
		}),
		path: "/healthz/syncloop", code: http.StatusInternalServerError,
		body: "internal server error: [-]pleg failed: pleg was last seen active 4m0s ago\n",
	}, {
		name: "healthz without a checker pings", opts: with(func(o *server.Options) { o.Health = nil }),
		path: "/healthz", code: http.StatusOK, body: "ok",
	}, {
		name: "pods", opts: full, path: "/pods", code: http.StatusOK, contentType: "application/json",
		check: func(t *testing.T, body []byte) {
			var list v1.PodList
			require.NoError(t, json.Unmarshal(body, &list))
			assert.Equal(t, metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, list.TypeMeta)
			assert.Equal(t, []v1.Pod(full.Pods.(podList)), list.Items)
		},
	}, {
		name: "pods, none", opts: with(func(o *server.Options) { o.Pods = podList(nil) }),
		path: "/pods", code: http.StatusOK, contentType: "application/json",
		check: func(t *testing.T, body []byte) {
			var list v1.PodList
			require.NoError(t, json.Unmarshal(body, &list))
			assert.Equal(t, "PodList", list.Kind)
			assert.Empty(t, list.Items)
		},
	}, {
		name: "pods without a lister", opts: with(func(o *server.Options) { o.Pods = nil }),
		path: "/pods", code: http.StatusServiceUnavailable, body: "no pod lister\n",
	}, {
		name: "node", opts: full, path: "/node", code: http.StatusOK, contentType: "application/json",
		check: func(t *testing.T, body []byte) {
			var n v1.Node
			require.NoError(t, json.Unmarshal(body, &n))
			assert.Equal(t, metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, n.TypeMeta)
			assert.Equal(t, "node1", n.Name)
			assert.Equal(t, *ready, n.Status)
		},
	}, {
		name: "node before its first status", opts: with(func(o *server.Options) { o.Node = nodeStatus{name: "node1"} }),
		path: "/node", code: http.StatusOK, contentType: "application/json",
		check: func(t *testing.T, body []byte) {
			var n v1.Node
			require.NoError(t, json.Unmarshal(body, &n))
			assert.Equal(t, "node1", n.Name)
			assert.Equal(t, v1.NodeStatus{}, n.Status)
		},
	}, {
		name: "node without a getter", opts: with(func(o *server.Options) { o.Node = nil }),
		path: "/node", code: http.StatusServiceUnavailable, body: "no node\n",
	}, {
		name: "metrics absent without a handler", opts: full, path: "/metrics", code: http.StatusNotFound,
	}, {
		name: "metrics served by the handler", opts: with(func(o *server.Options) { o.Metrics = metrics }),
		path: "/metrics", code: http.StatusOK, contentType: "text/plain; version=0.0.4", body: "up 1\n",
	}, {
		name: "unknown path", opts: full, path: "/spec/", code: http.StatusNotFound,
	}, {
		name: "stats without a provider", opts: full, path: "/stats/summary", code: http.StatusServiceUnavailable,
	}, {
		name: "stats", opts: with(func(o *server.Options) { o.Stats = newFakeNode() }), path: "/stats/summary",
		code: http.StatusOK, contentType: "application/json",
	}, {
		name: "read-only: no exec", opts: with(func(o *server.Options) { o.Streaming = newFakeNode(); o.PodGetter = newFakeNode() }),
		method: http.MethodPost, path: "/exec/default/web/app?command=ls&output=1",
		code: http.StatusMethodNotAllowed, body: "Debug endpoints are disabled.\n",
	}, {
		name: "read-only: no logs", opts: full, path: "/containerLogs/default/web/app",
		code: http.StatusMethodNotAllowed, body: "Debug endpoints are disabled.\n",
	}, {
		name: "read-only: no running pods", opts: full, path: "/runningpods/",
		code: http.StatusMethodNotAllowed, body: "Debug endpoints are disabled.\n",
	}, {
		name: "read-only: no run, attach, port forward, pprof, logs", opts: full, path: "/portForward/default/web",
		code: http.StatusMethodNotAllowed, body: "Debug endpoints are disabled.\n",
	}, {
		name: "read-only", opts: full, method: http.MethodPost, path: "/pods", code: http.StatusMethodNotAllowed,
	}, {
		name: "metrics read-only", opts: with(func(o *server.Options) { o.Metrics = metrics }),
		method: http.MethodDelete, path: "/metrics", code: http.StatusMethodNotAllowed,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			server.New(tc.opts).Handler().ServeHTTP(rec, httptest.NewRequest(method, tc.path, nil))
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.contentType != "" {
				assert.Equal(t, tc.contentType, rec.Header().Get("Content-Type"))
			}
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
			if tc.check != nil {
				tc.check(t, rec.Body.Bytes())
			}
		})
	}
}

// The handlers read the node's parts at each request, never a copy taken
// at New.
func TestEndpointsServeLiveState(t *testing.T) {
	var err error
	var pods podList
	srv := server.New(server.Options{
		Pods:   podListFunc(func() []v1.Pod { return pods }),
		Node:   nodeStatus{name: "node1"},
		Health: healthFunc(func() error { return err }),
	})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, _ := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	err = errors.New("[-]pleg failed: not yet")
	code, body := get("/healthz/syncloop")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "internal server error: [-]pleg failed: not yet\n", body)

	_, body = get("/pods")
	assert.NotContains(t, body, `"web"`)
	pods = podList{pod("web", v1.PodRunning)}
	_, body = get("/pods")
	assert.Contains(t, body, `"name":"web"`)
}

type podListFunc func() []v1.Pod

func (f podListFunc) PodStatuses() []v1.Pod { return f() }

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return l
}

// client is a client without keep-alives, so that no idle connection
// outlives a test.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestServeReturnsNilOnceItsContextEnds(t *testing.T) {
	l := listen(t)
	srv := server.New(server.Options{Pods: podList{}, Node: nodeStatus{name: "node1"}, Health: healthFunc(healthy)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()

	// Served while the context lasts (the listener queues the connection
	// until Serve accepts it).
	resp, err := client().Get("http://" + l.Addr().String() + "/healthz")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	// The listener is closed.
	_, err = l.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
}

func TestServeReturnsTheErrorThatStopsIt(t *testing.T) {
	l := listen(t)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	srv := server.New(server.Options{})
	err := srv.Serve(context.Background(), l)
	require.Error(t, err)
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.Contains(t, err.Error(), "serve "+addr)
}

// A request still in flight when ShutdownTimeout passes does not hold Serve
// up: it returns the shutdown's error.
func TestServeGivesUpOnRequestsPastShutdownTimeout(t *testing.T) {
	l := listen(t)
	inHandler, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(inHandler)
		<-release
		io.WriteString(w, "late\n")
	})
	srv := server.New(server.Options{Metrics: slow, ShutdownTimeout: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	got := make(chan error, 1)
	go func() {
		resp, err := client().Get("http://" + l.Addr().String() + "/metrics")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	<-inHandler
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve waited for the request past its ShutdownTimeout")
	}
	close(release)
	// The request itself completes: shutting down does not cut it.
	assert.NoError(t, <-got)
}
