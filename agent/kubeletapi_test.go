package agent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/server"
	nodestatus "github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// tokens is a bearer-token authenticator for the tests: "admin-token" is
// the admin, "nobody-token" a user the authorizer refuses.
var tokens = server.AuthenticatorFunc(func(r *http.Request) (*server.User, bool, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer admin-token":
		return &server.User{Name: "admin"}, true, nil
	case "Bearer nobody-token":
		return &server.User{Name: "nobody"}, true, nil
	}
	return nil, false, nil
})

var onlyAdmin = server.AuthorizerFunc(func(_ context.Context, a server.Attributes) (server.Decision, string, error) {
	if a.User.Name == "admin" {
		return server.DecisionAllow, "", nil
	}
	return server.DecisionNoOpinion, "", nil
})

// The kubelet API serves over TLS with the self-signed certificate it
// writes under the root dir, reports its port in the node's status, and
// answers an authorized user's logs, run and pods; a request without
// credentials gets 401, a user without the right 403; /configz is the
// provider's configuration.
func TestKubeletAPI(t *testing.T) {
	configz := server.ConfigProviderFunc(func() (any, error) {
		return map[string]string{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1"}, nil
	})
	logDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "syslog"), []byte("a system log line\n"), 0o644))
	journal := server.JournalFunc(func(_ context.Context, args []string, w io.Writer) error {
		if len(args) == 2 && args[1] == "_SYSTEMD_UNIT" {
			_, err := io.WriteString(w, "kubelet.service\n")
			return err
		}
		_, err := fmt.Fprintln(w, strings.Join(args, " "))
		return err
	})
	n := newNodeWith(t, agent.Options{
		HTTP: agent.HTTPOptions{API: &agent.APIOptions{Listen: "127.0.0.1:0", Authenticator: tokens, Authorizer: onlyAdmin,
			Configz: configz, WebSockets: v5Translator{},
			Flags:         server.FlagReaderFunc(func() map[string]string { return map[string]string{"port": "10250"} }),
			BinaryVersion: "1.36.3", EmulationVersion: "1.36", NodeLogDir: logDir, NodeLogQuery: true, Journal: journal}},
	})
	n.a.FakeRuntime().SetRules([]fake.Rule{{Name: "web", Behavior: fake.Behavior{Stdout: []string{"hello from web"}}}})
	n.write("web.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: ["sh", "-c", "echo hello from web; sleep 3600"]
`)
	n.waitPod("web-node1", "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	addr := n.a.APIAddr()
	require.NotNil(t, addr)

	certPEM, err := os.ReadFile(filepath.Join(n.root, "pki", "kubelet.crt"))
	require.NoError(t, err, "the self-signed certificate, under the root dir")
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Contains(t, cert.DNSNames, "node1")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "node1"}}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	call := func(method, path, token string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "https://"+addr.String()+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, _ := call("GET", "/pods", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no credentials")
	code, body := call("GET", "/pods", "nobody-token")
	assert.Equal(t, http.StatusForbidden, code, body)
	code, body = call("GET", "/pods", "admin-token")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"web-node1"`)

	code, body = call("GET", "/containerLogs/default/web-node1/web", "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "hello from web\n", body)
	code, body = call("GET", "/containerLogs/default/web-node1/web?previous=true", "admin-token")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `previous terminated container "web" in pod "web-node1" not found`)
	code, _ = call("GET", "/containerLogs/default/web-node1/nosuch", "admin-token")
	assert.Equal(t, http.StatusNotFound, code)

	code, body = call("POST", "/run/default/web-node1/web?cmd="+url.QueryEscape("echo ran"), "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "ran\n", body)

	code, body = call("GET", "/exec/default/web-node1/web?command=sh&output=1", "admin-token",
		"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Protocol", "v5.channel.k8s.io")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "translated exec", body, "a v5 exec goes to APIOptions.WebSockets")

	code, body = call("GET", "/healthz?verbose", "admin-token")
	assert.Equal(t, http.StatusOK, code)
	for _, check := range []string{"[+]ping ok", "[+]syncloop ok", "[+]pleg ok"} {
		assert.Contains(t, body, check)
	}

	code, body = call("GET", "/configz", "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"kubeletconfig": {"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1"}}`, body)
	code, _ = call("GET", "/configz", "nobody-token")
	assert.Equal(t, http.StatusForbidden, code)

	code, body = call("GET", "/statusz", "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "\nkubelet statusz\n")
	assert.Regexp(t, `Binary version(:|: |=| ) 1\.36\.3\n`, body)
	assert.Regexp(t, `Paths(:|: |=| ) /attach /checkpoint /configz /containerLogs /exec /flagz /healthz /logs /node /pods /portForward /run /runningpods /stats\n`, body)
	code, body = call("GET", "/flagz", "admin-token", "Accept", "application/json;g=config.k8s.io;v=v1beta1;as=Flagz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kubelet"},"flags":{"port":"10250"}}`, body)
	code, body = call("GET", "/logs/syslog", "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "a system log line\n", body)
	code, body = call("GET", "/logs/?query=kubelet&tailLines=3", "admin-token")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "--utc --no-pager --output=short-precise --pager-end --lines=3 --unit=kubelet\n", body)
	code, _ = call("GET", "/logs/syslog", "nobody-token")
	assert.Equal(t, http.StatusForbidden, code)

	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)
	st, ok := n.a.NodeStatus()
	require.True(t, ok)
	_, port, _ := strings.Cut(addr.String(), ":")
	assert.Equal(t, port, itoa(st.DaemonEndpoints.KubeletEndpoint.Port), "daemonEndpoints")
	// The agent declares what its blocks implement: the WebSockets it
	// serves, the in-place resize of init containers and of pod-level
	// resources, the restart rule action RestartAllContainers.
	assert.Equal(t, []string{agent.ExtendWebSocketsToKubelet, "InPlacePodLevelResourcesVerticalScaling",
		"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}, st.DeclaredFeatures)
}

// v5Translator answers the requests a WebSocketTranslator is given with
// what they are.
type v5Translator struct{}

func (v5Translator) StreamHandler(u *url.URL, _ server.StreamOptions) http.Handler {
	kind, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "translated "+kind) })
}

func (v5Translator) TunnelHandler(http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "tunnelled") })
}

// A caller may declare ExtendWebSocketsToKubelet only when the kubelet API
// serves the WebSockets the API server then sends it (the agent declares
// it then anyway); it declares only names the API server accepts.
func TestNewChecksDeclaredFeatures(t *testing.T) {
	api := &agent.APIOptions{Listen: "127.0.0.1:0", WebSockets: v5Translator{}}
	for _, tc := range []struct {
		name     string
		opts     agent.Options
		sentinel error // nil: New succeeds
	}{
		{"WebSockets declared and served", agent.Options{HTTP: agent.HTTPOptions{API: api}, Node: agent.NodeOptions{DeclaredFeatures: []string{agent.ExtendWebSocketsToKubelet}}}, nil},
		{"WebSockets served, declared by the agent", agent.Options{HTTP: agent.HTTPOptions{API: api}}, nil},
		{"WebSockets declared without a kubelet API", agent.Options{Node: agent.NodeOptions{DeclaredFeatures: []string{agent.ExtendWebSocketsToKubelet}}},
			agent.ErrInvalidOptions},
		{"WebSockets declared, not served", agent.Options{
			HTTP: agent.HTTPOptions{API: &agent.APIOptions{Listen: "127.0.0.1:0"}},
			Node: agent.NodeOptions{DeclaredFeatures: []string{agent.ExtendWebSocketsToKubelet}},
		}, agent.ErrInvalidOptions},
		{"a name the API server refuses", agent.Options{Node: agent.NodeOptions{DeclaredFeatures: []string{"not-a-feature"}}}, nodestatus.ErrInvalidOptions},
		{"a negative reservation", agent.Options{Node: agent.NodeOptions{KubeReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("-1Mi")}}}, agent.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.NodeName, opts.RootDir, opts.Node.Machine = "node1", t.TempDir(), nodetest.Machine{}
			_, err := agent.New(opts)
			if tc.sentinel == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.sentinel)
		})
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// selfSignedPair is a throwaway serving certificate named cn.
func selfSignedPair(t *testing.T, cn string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With TLS.GetCertificate the kubelet API serves what the getter gives at
// each handshake, a rotated certificate without a restart, and makes no
// self-signed pair.
func TestKubeletAPIServesRotatingCertificate(t *testing.T) {
	var current atomic.Pointer[tls.Certificate]
	current.Store(selfSignedPair(t, "first"))
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }
	n := newNodeWith(t, agent.Options{HTTP: agent.HTTPOptions{API: &agent.APIOptions{Listen: "127.0.0.1:0",
		Authenticator: tokens, Authorizer: onlyAdmin, TLS: server.TLSOptions{GetCertificate: get}}}})
	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)
	addr := n.a.APIAddr()
	require.NotNil(t, addr)
	servedName := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", addr.String(), &tls.Config{InsecureSkipVerify: true})
		require.NoError(t, err)
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	assert.Equal(t, "first", servedName())
	current.Store(selfSignedPair(t, "rotated"))
	assert.Equal(t, "rotated", servedName())
	_, err := os.Stat(filepath.Join(n.root, "pki"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no self-signed pair beside a getter")
}

// testCA is a CA that issues client certificates to the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate for user cn.
func (ca *testCA) client(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// The kubelet API follows its client CA file (TLS.ClientCAFile, what
// minikubelet's --client-ca-file sets; upstream's ReloadKubeletClientCAFile):
// once the file names another CA and the reload interval has passed, a
// client of the new CA is let in and one of the removed CA is refused,
// without a restart.
func TestKubeletAPIReloadsClientCAFile(t *testing.T) {
	a, b := newTestCA(t, "ca-a"), newTestCA(t, "ca-b")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, a.pem, 0o600))
	clk := clocktesting.NewFakePassiveClock(time.Now())
	n := newNodeWith(t, agent.Options{HTTP: agent.HTTPOptions{API: &agent.APIOptions{Listen: "127.0.0.1:0",
		Authorizer: onlyAdmin, TLS: server.TLSOptions{ClientCAFile: caFile, Clock: clk}}}})
	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)
	addr := n.a.APIAddr()
	require.NotNil(t, addr)
	get := func(cert tls.Certificate) int {
		t.Helper()
		tc := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}, Timeout: 10 * time.Second}
		resp, err := c.Get("https://" + addr.String() + "/pods")
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	ofA, ofB := a.client(t, "admin"), b.client(t, "admin")
	assert.Equal(t, http.StatusOK, get(ofA))
	assert.Equal(t, http.StatusUnauthorized, get(ofB))

	require.NoError(t, os.WriteFile(caFile+".new", b.pem, 0o600))
	require.NoError(t, os.Rename(caFile+".new", caFile))
	clk.SetTime(clk.Now().Add(server.DefaultReloadInterval))
	assert.Equal(t, http.StatusOK, get(ofB), "a client of the new CA, without a restart")
	assert.Equal(t, http.StatusUnauthorized, get(ofA), "a client of the removed CA")
}
