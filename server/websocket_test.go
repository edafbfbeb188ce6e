package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/server"
)

// translator is a WebSocketTranslator that records what it is asked and
// answers the requests it is given itself, so that a test sees which
// requests went to it. tunnel, when set, serves a tunnelled port forward
// with the proxy to the runtime.
type translator struct {
	tunnel func(upgrade http.Handler) http.Handler

	mu    sync.Mutex
	calls []translation
}

// translation is one recorded call of the translator.
type translation struct {
	Method string // StreamHandler or TunnelHandler
	URL    string // StreamHandler's
	Opts   server.StreamOptions
}

var _ server.WebSocketTranslator = (*translator)(nil)

func (tr *translator) record(c translation) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls = append(tr.calls, c)
}

func (tr *translator) recorded() []translation {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]translation(nil), tr.calls...)
}

func (tr *translator) StreamHandler(u *url.URL, opts server.StreamOptions) http.Handler {
	tr.record(translation{Method: "StreamHandler", URL: u.String(), Opts: opts})
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "translated") })
}

func (tr *translator) TunnelHandler(upgrade http.Handler) http.Handler {
	tr.record(translation{Method: "TunnelHandler"})
	if tr.tunnel != nil {
		return tr.tunnel(upgrade)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "tunnelled") })
}

// webSocket is the header of a WebSocket upgrade asking for protocols.
func webSocket(protocols string) http.Header {
	return http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Protocol": {protocols}}
}

// The translator gets exactly the requests upstream kubelet translates:
// exec and attach asking for v5.channel.k8s.io, port forwards asking for a
// tunnelled SPDY protocol (whose query's ports are not read); any other
// request, or any request without a translator, takes the old path (here,
// the redirect to the runtime). It is asked only once the pod and the
// runtime's URL were found.
func TestWebSocketTranslatorTakesItsRequestsOnly(t *testing.T) {
	v5 := webSocket("v5.channel.k8s.io")
	v5Among := webSocket("v4.channel.k8s.io, v5.channel.k8s.io")
	v4 := webSocket("v4.channel.k8s.io")
	tunnel := webSocket("SPDY/3.1+portforward.k8s.io")
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	streamed := func(kind string, opts server.StreamOptions) []translation {
		return []translation{{Method: "StreamHandler", URL: "http://127.0.0.1:1/" + kind + "/token", Opts: opts}}
	}
	tunnelled := []translation{{Method: "TunnelHandler"}}
	out := server.StreamOptions{Stdout: true}
	for _, tc := range []struct {
		name     string
		path     string
		header   http.Header
		noHook   bool // no translator
		proxy    bool // RedirectContainerStreaming off
		node     func(n *fakeNode)
		code     int
		body     string
		want     []translation // the translator's calls
		wantNode []call        // the node's calls, when set
	}{{
		name: "exec over v5", path: "/exec/default/web/app?command=sh&input=1&output=1&tty=1", header: v5,
		code: http.StatusOK, body: "translated", want: streamed("exec", server.StreamOptions{Stdin: true, Stdout: true, TTY: true}),
		wantNode: []call{{Method: "Exec", Pod: "default/web", Container: "app", Cmd: []string{"sh"},
			Stream: server.StreamOptions{Stdin: true, Stdout: true, TTY: true}}},
	}, {
		name: "attach over v5", path: "/attach/default/web/sidecar?output=1&error=1", header: v5,
		code: http.StatusOK, body: "translated", want: streamed("attach", server.StreamOptions{Stdout: true, Stderr: true}),
	}, {
		name: "exec offering v4 and v5", path: "/exec/default/web/app?command=ls&output=1", header: v5Among,
		code: http.StatusOK, want: streamed("exec", out),
	}, {
		name: "exec over v5 is translated, not redirected", path: "/exec/default/web/app?command=ls&output=1", header: v5,
		code: http.StatusOK, want: streamed("exec", out),
	}, {
		name: "exec over v5 with the proxy", path: "/exec/default/web/app?command=ls&output=1", header: v5, proxy: true,
		code: http.StatusOK, want: streamed("exec", out),
	}, {
		name: "exec over v5 without a translator", path: "/exec/default/web/app?command=ls&output=1", header: v5, noHook: true,
		code: http.StatusFound,
	}, {
		name: "exec over v4", path: "/exec/default/web/app?command=ls&output=1", header: v4, code: http.StatusFound,
	}, {
		name: "exec over SPDY", path: "/exec/default/web/app?command=ls&output=1", header: spdy, code: http.StatusFound,
	}, {
		name: "exec over a tunnel protocol", path: "/exec/default/web/app?command=ls&output=1", header: tunnel, code: http.StatusFound,
	}, {
		name: "v5 without a WebSocket upgrade", path: "/exec/default/web/app?command=ls&output=1",
		header: http.Header{"Sec-Websocket-Protocol": {"v5.channel.k8s.io"}}, code: http.StatusFound,
	}, {
		name: "exec over v5 without streams", path: "/exec/default/web/app?command=ls", header: v5,
		code: http.StatusBadRequest, body: "you must specify at least 1 of stdin, stdout, stderr", wantNode: []call{},
	}, {
		name: "exec over v5 into no such pod", path: "/exec/default/nope/app?command=ls&output=1", header: v5,
		code: http.StatusNotFound, body: "pod does not exist",
	}, {
		name: "exec over v5, the runtime fails", path: "/exec/default/web/app?command=ls&output=1", header: v5,
		node: func(n *fakeNode) {
			n.stream = func(string) (*url.URL, error) { return nil, fmt.Errorf("container %q: %w", "app", server.ErrNotFound) }
		},
		code: http.StatusNotFound, body: `container "app": not found`,
	}, {
		name: "port forward through a tunnel: no ports from the query", path: "/portForward/default/web/uid-web?port=80", header: tunnel,
		code: http.StatusOK, body: "tunnelled", want: tunnelled,
		wantNode: []call{{Method: "PortForward", Pod: "default/web"}},
	}, {
		name: "port forward through a tunnel without a port", path: "/portForward/default/web", header: tunnel,
		code: http.StatusOK, want: tunnelled, wantNode: []call{{Method: "PortForward", Pod: "default/web"}},
	}, {
		name: "port forward through a tunnel offering several versions", path: "/portForward/default/web",
		header: webSocket("SPDY/3.1+portforward.k8s.io, SPDY/3.1+portforward2.k8s.io"), code: http.StatusOK, want: tunnelled,
	}, {
		name: "port forward through a tunnel with another UID", path: "/portForward/default/web/uid-old", header: tunnel,
		code: http.StatusNotFound, body: "pod not found",
	}, {
		name: "port forward through a tunnel without a translator", path: "/portForward/default/web", header: tunnel, noHook: true,
		code: http.StatusBadRequest, body: `query parameter "port" is required`,
	}, {
		name: "port forward over a WebSocket", path: "/portForward/default/web?port=80", header: v4, code: http.StatusFound,
		wantNode: []call{{Method: "PortForward", Pod: "default/web", Ports: []int32{80}}},
	}, {
		name: "port forward over v5", path: "/portForward/default/web?port=80", header: v5, code: http.StatusFound,
	}, {
		name: "port forward over SPDY", path: "/portForward/default/web", header: spdy, code: http.StatusFound,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(webPod())
			if tc.node != nil {
				tc.node(n)
			}
			tr := &translator{}
			srv := secure(n, func(o *server.Options) {
				o.RedirectContainerStreaming = !tc.proxy
				if !tc.noHook {
					o.WebSockets = tr
				}
			})
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
			assert.Equal(t, tc.want, tr.recorded())
			switch {
			case tc.wantNode == nil:
			case len(tc.wantNode) == 0:
				assert.Empty(t, n.recorded())
			default:
				assert.Equal(t, tc.wantNode, n.recorded())
			}
		})
	}
}

// spdyTunnel stands in for a real tunnel (examples/websockets has one): it
// turns the WebSocket upgrade into the SPDY upgrade the runtime expects and
// leaves the client to speak SPDY on the connection, which is enough to see
// that the handler it wraps is the proxy to the runtime's port-forward URL.
func spdyTunnel(upgrade http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Clone(r.Context())
		var protocols []string
		for _, p := range strings.Split(req.Header.Get("Sec-Websocket-Protocol"), ",") {
			protocols = append(protocols, strings.TrimPrefix(strings.TrimSpace(p), "SPDY/3.1+"))
		}
		for _, h := range []string{"Sec-Websocket-Protocol", "Sec-Websocket-Key", "Sec-Websocket-Version"} {
			req.Header.Del(h)
		}
		req.Method = http.MethodPost
		req.Header.Set("Upgrade", "SPDY/3.1")
		req.Header[httpstream.HeaderProtocolVersion] = protocols
		upgrade.ServeHTTP(w, req)
	})
}

// bufferedConn reads what the response's reader has buffered first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// A port forward through the tunnel reaches the fake runtime's port with no
// port in the query: the runtime is asked for a session without ports, and
// the SPDY streams name the port.
func TestPortForwardThroughATunnelReachesTheRuntime(t *testing.T) {
	rt := fake.New(fake.Options{Clock: clock.RealClock{}, PortRules: []fake.PortRule{{Port: 80, Handler: fake.EchoPort}}})
	t.Cleanup(rt.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	streaming, err := fake.NewStreamingServer(rt, fake.StreamingOptions{Listener: lis})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- streaming.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
	sandbox, err := rt.RunPodSandbox(t.Context(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}, "")
	require.NoError(t, err)

	n := newFakeNode(webPod())
	n.stream = func(string) (*url.URL, error) {
		resp, err := rt.PortForward(t.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox})
		if err != nil {
			return nil, err
		}
		return url.Parse(resp.GetUrl())
	}
	tr := &translator{tunnel: spdyTunnel}
	ts := httptest.NewServer(secure(n, func(o *server.Options) {
		o.RedirectContainerStreaming = false
		o.WebSockets = tr
	}).Handler())
	t.Cleanup(ts.Close)

	conn, br, resp := upgrade(t, ts.Listener.Addr().String(), "/portForward/default/web", "websocket",
		http.Header{"Sec-Websocket-Protocol": {"SPDY/3.1+portforward.k8s.io"}})
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Equal(t, "portforward.k8s.io", resp.Header.Get(httpstream.HeaderProtocolVersion))
	spdyConn, err := spdy.NewClientConnection(bufferedConn{Conn: conn, r: br})
	require.NoError(t, err)
	defer spdyConn.Close()
	stream := func(kind string) httpstream.Stream {
		h := http.Header{}
		h.Set(v1.StreamType, kind)
		h.Set(v1.PortHeader, "80")
		h.Set(v1.PortForwardRequestIDHeader, "0")
		s, err := spdyConn.CreateStream(h)
		require.NoError(t, err)
		return s
	}
	errs := stream(v1.StreamTypeError)
	require.NoError(t, errs.Close()) // the client writes nothing on it
	data := stream(v1.StreamTypeData)
	_, err = io.WriteString(data, "ping\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(data).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)
	require.NoError(t, data.Close())

	assert.Equal(t, []translation{{Method: "TunnelHandler"}}, tr.recorded())
	assert.Equal(t, []call{{Method: "PortForward", Pod: "default/web"}}, n.recorded())
}
