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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/server"
)

// echoBackend is a runtime's streaming server in miniature: it upgrades
// any request to the protocol asked for and echoes what it reads, and it
// records the requests it got.
type echoBackend struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newEchoBackend(t *testing.T) *echoBackend {
	b := &echoBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.reqs = append(b.reqs, r.Clone(r.Context()))
		b.mu.Unlock()
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "not an upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
		rw.Flush()
		_, _ = io.Copy(conn, rw) // echo until the client closes
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *echoBackend) requests() []*http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*http.Request(nil), b.reqs...)
}

// upgrade sends an upgrade request on a new connection to addr and returns
// the connection and the response's status line and headers.
func upgrade(t *testing.T, addr, path, protocol string, header http.Header) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", protocol)
	for k, vs := range header {
		req.Header[k] = vs
	}
	require.NoError(t, req.Write(conn))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	require.NoError(t, err)
	return conn, br, resp
}

// The client's upgraded connection reaches the runtime's streaming URL
// through the proxy, SPDY and WebSocket alike, and carries bytes both
// ways; the client's bearer token is not passed on.
func TestStreamsAreProxied(t *testing.T) {
	backend := newEchoBackend(t)
	tokens := server.TokenAuthenticatorFunc(func(_ context.Context, token string) (*server.User, bool, error) {
		return &server.User{Name: "admin"}, token == "secret", nil
	})
	authn, err := server.NewAuthenticator(server.AuthenticatorOptions{Token: tokens})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, path, protocol, want string
	}{
		{"exec over SPDY", "/exec/default/web/app?command=sh&input=1&output=1", "SPDY/3.1", "/exec/token"},
		{"attach over a WebSocket", "/attach/default/web/app?output=1", "websocket", "/attach/token"},
		{"port forward over SPDY", "/portForward/default/web", "SPDY/3.1", "/portforward/token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(webPod())
			n.stream = func(kind string) (*url.URL, error) {
				u, err := url.Parse(backend.URL + "/" + kind + "/token")
				return u, err
			}
			srv := secure(n, func(o *server.Options) {
				o.RedirectContainerStreaming = false
				o.Auth = &server.Auth{Authenticator: authn, Authorizer: server.AlwaysAllow{}}
			})
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()

			conn, br, resp := upgrade(t, ts.Listener.Addr().String(), tc.path, tc.protocol,
				http.Header{"Authorization": {"Bearer secret"}})
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			assert.Equal(t, tc.protocol, resp.Header.Get("Upgrade"))
			for _, msg := range []string{"hello\n", "again\n"} {
				_, err := io.WriteString(conn, msg)
				require.NoError(t, err)
				line, err := br.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, msg, line)
			}
			conn.Close()

			reqs := backend.requests()
			require.NotEmpty(t, reqs)
			last := reqs[len(reqs)-1]
			assert.Equal(t, tc.want, last.URL.Path)
			assert.Empty(t, last.Header.Get("Authorization"), "the token went on to the runtime")
			assert.Equal(t, tc.protocol, last.Header.Get("Upgrade"))
		})
	}
}

// A stream request that asks for no upgrade is refused, as upstream's proxy
// does; a streaming server that cannot be reached fails the request.
func TestStreamProxyErrors(t *testing.T) {
	backend := newEchoBackend(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	for _, tc := range []struct {
		name    string
		target  string
		upgrade bool
		code    int
		has     string
	}{
		{"no upgrade", backend.URL, false, http.StatusInternalServerError, "Upgrade request required"},
		{"streaming server gone", deadURL, true, http.StatusInternalServerError, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(webPod())
			n.stream = func(kind string) (*url.URL, error) { return url.Parse(tc.target + "/" + kind + "/token") }
			ts := httptest.NewServer(secure(n, func(o *server.Options) { o.RedirectContainerStreaming = false }).Handler())
			defer ts.Close()
			var resp *http.Response
			if tc.upgrade {
				_, _, resp = upgrade(t, ts.Listener.Addr().String(), "/exec/default/web/app?command=sh&output=1", "SPDY/3.1", nil)
			} else {
				var err error
				resp, err = ts.Client().Post(ts.URL+"/exec/default/web/app?command=sh&output=1", "", nil)
				require.NoError(t, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode)
			assert.Contains(t, string(body), tc.has)
		})
	}
}

// A proxied stream does not hold Serve up once its context ends: its
// connection is closed.
func TestServeClosesProxiedStreams(t *testing.T) {
	backend := newEchoBackend(t)
	n := newFakeNode(webPod())
	n.stream = func(kind string) (*url.URL, error) { return url.Parse(backend.URL + "/" + kind + "/token") }
	srv := secure(n, func(o *server.Options) { o.RedirectContainerStreaming = false })
	l := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()

	conn, br, resp := upgrade(t, l.Addr().String(), "/exec/default/web/app?command=sh&input=1&output=1", "SPDY/3.1", nil)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	_, err := io.WriteString(conn, "ping\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	// The stream's connection was closed by the server.
	_, err = br.ReadString('\n')
	assert.Error(t, err)
	assert.False(t, strings.Contains(fmt.Sprint(err), "timeout"), "the connection was not closed: %v", err)
}
