package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/server"
)

// testCA is a certificate authority for client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

var serialSeq struct {
	sync.Mutex
	n int64
}

func nextSerial() *big.Int {
	serialSeq.Lock()
	defer serialSeq.Unlock()
	serialSeq.n++
	return big.NewInt(serialSeq.n)
}

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pool: pool}
}

// issue makes a client certificate for cn in orgs, for client
// authentication unless usage says otherwise.
func (ca *testCA) issue(t testing.TB, cn string, orgs []string, usage ...x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	if len(usage) == 0 {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// policy is an authorizer over a table of users' subresources of nodes,
// recording what it was asked.
type policy struct {
	allow map[string][]string // user → subresources allowed
	deny  map[string][]string // user → subresources denied outright
	err   error

	mu    sync.Mutex
	asked []server.Attributes
}

func (p *policy) Authorize(_ context.Context, a server.Attributes) (server.Decision, string, error) {
	p.mu.Lock()
	p.asked = append(p.asked, a)
	p.mu.Unlock()
	if p.err != nil {
		return server.DecisionNoOpinion, "", p.err
	}
	for _, sub := range p.deny[a.User.Name] {
		if sub == a.Subresource {
			return server.DecisionDeny, "denied", nil
		}
	}
	for _, sub := range p.allow[a.User.Name] {
		if sub == a.Subresource || sub == "*" {
			return server.DecisionAllow, "", nil
		}
	}
	return server.DecisionNoOpinion, "", nil
}

func (p *policy) subresources() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var subs []string
	for _, a := range p.asked {
		subs = append(subs, a.Subresource)
	}
	return subs
}

var tokens = server.TokenAuthenticatorFunc(func(_ context.Context, token string) (*server.User, bool, error) {
	switch token {
	case "alice-token":
		return &server.User{Name: "alice", Groups: []string{"devs"}}, true, nil
	case "metrics-token":
		return &server.User{Name: "system:serviceaccount:kube-system:metrics-server"}, true, nil
	case "broken":
		return nil, false, errors.New("tokenreview: connection refused")
	}
	return nil, false, nil
})

func TestAuthentication(t *testing.T) {
	ca, other := newCA(t, "client-ca"), newCA(t, "other-ca")
	admin := ca.issue(t, "kube-apiserver-kubelet-client", []string{"system:masters"})
	for _, tc := range []struct {
		name      string
		anonymous bool
		cert      *tls.Certificate
		header    string // the Authorization header
		code      int
		user      *server.User // the user the handler sees
	}{{
		name: "no credentials", code: http.StatusUnauthorized,
	}, {
		name: "no credentials, anonymous enabled", anonymous: true, code: http.StatusOK,
		user: &server.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
	}, {
		name: "a client certificate of the client CA", cert: &admin, code: http.StatusOK,
		user: &server.User{Name: "kube-apiserver-kubelet-client", Groups: []string{"system:masters", "system:authenticated"}},
	}, {
		name: "a client certificate of another CA", cert: ptrTo(other.issue(t, "mallory", nil)), code: http.StatusUnauthorized,
	}, {
		name: "a client certificate of another CA, anonymous enabled", anonymous: true,
		cert: ptrTo(other.issue(t, "mallory", nil)), code: http.StatusUnauthorized,
	}, {
		name: "a server certificate as a client's", cert: ptrTo(ca.issue(t, "node2", nil, x509.ExtKeyUsageServerAuth)),
		code: http.StatusUnauthorized,
	}, {
		name: "a client certificate without a name, anonymous enabled", anonymous: true, cert: ptrTo(ca.issue(t, "", nil)),
		code: http.StatusOK, user: &server.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
	}, {
		name: "a token", header: "Bearer alice-token", code: http.StatusOK,
		user: &server.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}},
	}, {
		name: "a token, the scheme in lower case", header: "bearer alice-token", code: http.StatusOK,
		user: &server.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}},
	}, {
		name: "an unknown token", header: "Bearer guess", code: http.StatusUnauthorized,
	}, {
		name: "an unknown token, anonymous enabled", anonymous: true, header: "Bearer guess", code: http.StatusUnauthorized,
	}, {
		name: "a token that cannot be checked", header: "Bearer broken", code: http.StatusUnauthorized,
	}, {
		name: "an empty token, anonymous enabled", anonymous: true, header: "Bearer ", code: http.StatusOK,
		user: &server.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
	}, {
		name: "basic credentials are not looked at", header: "Basic YWxpY2U6cHc=", code: http.StatusUnauthorized,
	}, {
		name: "a certificate and an unknown token: the certificate first", cert: &admin, header: "Bearer guess",
		code: http.StatusOK,
		user: &server.User{Name: "kube-apiserver-kubelet-client", Groups: []string{"system:masters", "system:authenticated"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			authn, err := server.NewAuthenticator(server.AuthenticatorOptions{ClientCA: server.StaticCAs(ca.pool), Token: tokens, Anonymous: tc.anonymous})
			require.NoError(t, err)
			var seen *server.User
			srv := server.New(server.Options{
				Node: nodeStatus{name: "node1"}, Auth: &server.Auth{Authenticator: authn, Authorizer: server.AlwaysAllow{}},
				Checks: []server.HealthCheck{{Name: "user", Check: func(r *http.Request) error {
					seen, _ = server.UserFrom(r.Context())
					return nil
				}}},
			})
			req := httptest.NewRequest(http.MethodGet, "/healthz/user", nil)
			if tc.cert != nil {
				req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.cert.Leaf}}
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.code == http.StatusUnauthorized {
				assert.Equal(t, "Unauthorized", rec.Body.String())
				assert.Nil(t, seen)
				return
			}
			require.NotNil(t, seen)
			assert.Equal(t, tc.user.Name, seen.Name)
			assert.Equal(t, tc.user.Groups, seen.Groups)
		})
	}
}

func TestNewAuthenticatorNeedsAMethod(t *testing.T) {
	_, err := server.NewAuthenticator(server.AuthenticatorOptions{})
	assert.EqualError(t, err, "no authentication method configured")
	a, err := server.NewAuthenticator(server.AuthenticatorOptions{Anonymous: true})
	require.NoError(t, err)
	u, ok, err := a.AuthenticateRequest(httptest.NewRequest(http.MethodGet, "/pods", nil))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, &server.User{Name: server.UserAnonymous, Groups: []string{server.GroupUnauthenticated}}, u)
}

func TestX509AuthenticatorError(t *testing.T) {
	other := newCA(t, "other-ca")
	c := other.issue(t, "mallory", []string{"evil"})
	req := httptest.NewRequest(http.MethodGet, "/pods", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}}
	_, ok, err := server.X509Authenticator{Roots: server.StaticCAs(newCA(t, "client-ca").pool)}.AuthenticateRequest(req)
	assert.False(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "verifying certificate SN="+c.Leaf.SerialNumber.String()+", SKID=")
	assert.Contains(t, err.Error(), "failed: x509: certificate signed by unknown authority")
}

func TestAuthorization(t *testing.T) {
	users := map[string][]string{
		"alice":   {"pods"},
		"bob":     {"proxy"},
		"metrics": {"stats", "metrics"},
		"probe":   {"healthz"},
		"admin":   {"*"},
	}
	for _, tc := range []struct {
		name   string
		user   string
		method string // GET unless set
		path   string
		pol    *policy // &policy{allow: users} unless set
		code   int
		want   string
		asked  []string // the subresources the authorizer was asked, in order
	}{{
		name: "pods by the pods subresource", user: "alice", path: "/pods", code: http.StatusOK, asked: []string{"pods"},
	}, {
		name: "pods by proxy, tried second", user: "bob", path: "/pods", code: http.StatusOK, asked: []string{"pods", "proxy"},
	}, {
		name: "running pods by the pods subresource", user: "alice", path: "/runningpods/", code: http.StatusOK, asked: []string{"pods"},
	}, {
		name: "no exec without proxy", user: "alice", method: http.MethodPost, path: "/exec/default/web/app?command=ls&output=1",
		code: http.StatusForbidden, want: "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n",
		asked: []string{"proxy"},
	}, {
		name: "exec with proxy", user: "bob", method: http.MethodPost, path: "/exec/default/web/app?command=ls&output=1",
		code: http.StatusFound, asked: []string{"proxy"},
	}, {
		name: "logs need proxy", user: "metrics", path: "/containerLogs/default/web/app",
		code: http.StatusForbidden, want: "Forbidden (user=metrics, verb=get, resource=nodes, subresource(s)=[proxy])\n",
	}, {
		name: "stats", user: "metrics", path: "/stats/summary?only_cpu_and_memory=true", code: http.StatusOK, asked: []string{"stats"},
	}, {
		name: "stats, posted", user: "metrics", method: http.MethodPost, path: "/stats/summary", code: http.StatusOK, asked: []string{"stats"},
	}, {
		name: "metrics not pods", user: "metrics", path: "/pods",
		code: http.StatusForbidden, want: "Forbidden (user=metrics, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
		asked: []string{"pods", "proxy"},
	}, {
		name: "healthz", user: "probe", path: "/healthz/ping", code: http.StatusOK, asked: []string{"healthz"},
	}, {
		name: "healthz by proxy", user: "bob", path: "/healthz", code: http.StatusOK, asked: []string{"healthz", "proxy"},
	}, {
		name: "a denial of one subresource still tries proxy", user: "bob", path: "/pods",
		pol: &policy{allow: users, deny: map[string][]string{"bob": {"pods"}}}, code: http.StatusOK, asked: []string{"pods", "proxy"},
	}, {
		name: "the authorizer fails", user: "alice", path: "/pods", pol: &policy{err: errors.New("webhook down")},
		code: http.StatusInternalServerError, want: "Authorization error (user=alice, verb=get, resource=nodes, subresource=pods)",
		asked: []string{"pods"},
	}, {
		name: "an unknown user", user: "eve", path: "/stats/summary",
		code: http.StatusForbidden, want: "Forbidden (user=eve, verb=get, resource=nodes, subresource(s)=[stats])\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pol := tc.pol
			if pol == nil {
				pol = &policy{allow: users}
			}
			n := newFakeNode(webPod())
			srv := secure(n, func(o *server.Options) {
				o.Pods = podList{}
				o.Auth = &server.Auth{Authorizer: pol, Authenticator: server.AuthenticatorFunc(func(*http.Request) (*server.User, bool, error) {
					return &server.User{Name: tc.user}, true, nil
				})}
			})
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(method, tc.path, nil))
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.want != "" {
				assert.Equal(t, tc.want, rec.Body.String())
			}
			if tc.asked != nil {
				assert.Equal(t, tc.asked, pol.subresources())
			}
			if tc.code == http.StatusForbidden {
				assert.Empty(t, n.recorded(), "a forbidden request reached the node")
			}
		})
	}
}

// The attributes of each path, as upstream kubelet maps them: the verb from
// the method, a specific subresource first where upstream has one, then the
// path's own (proxy for all the rest), always nodes/<node name> in v1.
func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsfoo", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/syncloop", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"POST", "/stats/summary", "create", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/statsx", "get", []string{"proxy"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/metrics/probes", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/default/web/app", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/containerLogs/default/web/app", "get", []string{"proxy"}},
		{"POST", "/exec/default/web/app", "create", []string{"proxy"}},
		{"GET", "/exec/default/web/app", "get", []string{"proxy"}},
		{"POST", "/run/default/web/app", "create", []string{"proxy"}},
		{"PUT", "/attach/default/web/app", "update", []string{"proxy"}},
		{"PATCH", "/portForward/default/web", "patch", []string{"proxy"}},
		{"DELETE", "/node", "delete", []string{"proxy"}},
		{"HEAD", "/pods", "", []string{"pods", "proxy"}},
		{"OPTIONS", "/spec/", "", []string{"proxy"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var asked []server.Attributes
			srv := server.New(server.Options{Node: nodeStatus{name: "node1"}, Auth: &server.Auth{
				Authenticator: server.Anonymous{},
				Authorizer: server.AuthorizerFunc(func(_ context.Context, a server.Attributes) (server.Decision, string, error) {
					asked = append(asked, a)
					return server.DecisionNoOpinion, "", nil
				}),
			}})
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, http.StatusForbidden, rec.Code)
			var subs []string
			for _, a := range asked {
				subs = append(subs, a.Subresource)
				assert.Equal(t, server.Attributes{User: a.User, Verb: tc.verb, APIVersion: "v1", Resource: "nodes",
					Subresource: a.Subresource, Name: "node1", Path: tc.path}, a)
				assert.Equal(t, server.UserAnonymous, a.User.Name)
			}
			assert.Equal(t, tc.subs, subs)
		})
	}
}

// Without an authenticator every request is refused, without an
// authorizer every one is forbidden, and AlwaysDeny forbids: a secure
// server fails closed.
func TestAuthFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth server.Auth
		code int
	}{
		{"no authenticator", server.Auth{Authorizer: server.AlwaysAllow{}}, http.StatusUnauthorized},
		{"no authorizer", server.Auth{Authenticator: server.Anonymous{}}, http.StatusForbidden},
		{"always deny", server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysDeny{}}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := tc.auth
			srv := server.New(server.Options{Health: healthFunc(healthy), Auth: &auth})
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			assert.Equal(t, tc.code, rec.Code)
		})
	}
}

// The secure server over TLS: a client certificate of the client CA gets
// in, none or another CA's does not (the handshake asks for a certificate
// without requiring one, so that the answer is HTTP's 401).
func TestServeTLSWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t, "client-ca"), newCA(t, "other-ca")
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	get := serveWithClientCA(t, dir, caFile, nil)
	code, _ := get(ptrTo(ca.issue(t, "apiserver", nil)))
	assert.Equal(t, http.StatusOK, code)
	code, body := get(ptrTo(ca.issue(t, "someone", nil)))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "Forbidden (user=someone, verb=get, resource=nodes, subresource(s)=[pods proxy])\n", body)
	code, _ = get(nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(ptrTo(other.issue(t, "apiserver", nil)))
	assert.Equal(t, http.StatusUnauthorized, code)
}

func ptrTo[T any](v T) *T { return &v }

// serveWithClientCA serves the secure server over TLS, its self-signed
// certificate under dir/pki, client certificates checked against caFile
// (read again on clk; nil is the real clock), "apiserver" allowed to
// proxy, until the test ends. It returns a GET of /pods with a client
// certificate (nil: none), answering the status code and the body.
func serveWithClientCA(t *testing.T, dir, caFile string, clk clock.PassiveClock) func(cert *tls.Certificate) (int, string) {
	t.Helper()
	cfg, cas, err := server.TLSConfig(server.TLSOptions{CertDir: filepath.Join(dir, "pki"), Host: "localhost", ClientCAFile: caFile, Clock: clk})
	require.NoError(t, err)
	authn, err := server.NewAuthenticator(server.AuthenticatorOptions{ClientCA: cas})
	require.NoError(t, err)
	srv := server.New(server.Options{Pods: podList{}, Node: nodeStatus{name: "node1"}, TLS: cfg,
		Auth: &server.Auth{Authenticator: authn, Authorizer: &policy{allow: map[string][]string{"apiserver": {"proxy"}}}}})
	l := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})

	// The client trusts the self-signed certificate's CA, the second in
	// kubelet.crt.
	crt, err := os.ReadFile(filepath.Join(dir, "pki", "kubelet.crt"))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(crt))
	return func(cert *tls.Certificate) (int, string) {
		t.Helper()
		tc := &tls.Config{RootCAs: roots, ServerName: "localhost"}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
		resp, err := c.Get("https://" + l.Addr().String() + "/pods")
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
}

// A request authenticator is asked after client certificates and tokens,
// and its users are authenticated like theirs.
func TestNewAuthenticatorRequest(t *testing.T) {
	carol := server.AuthenticatorFunc(func(r *http.Request) (*server.User, bool, error) {
		if r.Header.Get("X-Test-User") == "carol" {
			return &server.User{Name: "carol"}, true, nil
		}
		return nil, false, nil
	})
	authn, err := server.NewAuthenticator(server.AuthenticatorOptions{Request: carol})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Header.Set("X-Test-User", "carol")
	u, ok, err := authn.AuthenticateRequest(req)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "carol", u.Name)
	assert.Equal(t, []string{"system:authenticated"}, u.Groups)
	_, ok, err = authn.AuthenticateRequest(httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.False(t, ok)
	assert.NoError(t, err)
}
