package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/eviction"
)

// opencensus, which virtual-kubelet imports, starts its stats worker in an
// init function; spdystream's shutdown goroutine outlives a connection by
// a moment.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node", "--container-runtime-endpoint", "unix:///run/c.sock",
		"--root-dir", "/r", "--pod-logs-dir", "/l", "--port", "10250", "--node-ip", "192.0.2.7", "-v",
		"--bootstrap-kubeconfig", "/b", "--cert-dir", "/p", "--rotate-server-certificates",
		"--cluster-dns", "10.96.0.10,fd00::a", "--cluster-dns=10.96.0.11", "--cluster-domain", "cluster.local"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, &config{kubeconfig: "/k", nodeName: "kk-node", endpoint: "unix:///run/c.sock", rootDir: "/r", podLogsDir: "/l",
		port: 10250, nodeIP: "192.0.2.7", verbose: true, bootstrapKubeconfig: "/b", certDir: "/p", rotateServerCertificates: true,
		clusterDNS: []string{"10.96.0.10", "fd00::a", "10.96.0.11"}, clusterDomain: "cluster.local"}, c)
	assert.Equal(t, "/p", c.pkiDir())

	c, err = parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node", "--port", "10250",
		"--tls-cert-file", "/s.crt", "--tls-private-key-file", "/s.key"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "/s.crt", c.tlsCertFile)
	assert.Equal(t, "/s.key", c.tlsKeyFile)

	c, err = parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(os.TempDir(), "vknode"), c.rootDir)
	assert.Zero(t, c.port, "no kubelet API unless asked for")
	assert.Empty(t, c.endpoint, "the embedded fake runtime")
	assert.Equal(t, filepath.Join(c.rootDir, "pki"), c.pkiDir())
	assert.Empty(t, c.clusterDNS, "ClusterFirst pods get the host's resolver")
	assert.Nil(t, c.evictionHard, "upstream's default thresholds")
	assert.Nil(t, agentOptions(c, nil).Eviction.Thresholds)

	c, err = parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node", "--eviction-hard", "memory.available<100Mi,nodefs.available<10%"}, io.Discard)
	require.NoError(t, err)
	want, err := eviction.ParseThresholds("memory.available<100Mi,nodefs.available<10%", "", "", "")
	require.NoError(t, err)
	assert.Equal(t, want, agentOptions(c, nil).Eviction.Thresholds)

	c, err = parseFlags([]string{"--kubeconfig", "/k", "--node-name", "kk-node", "--eviction-hard", ""}, io.Discard)
	require.NoError(t, err)
	assert.NotNil(t, c.evictionHard, "an empty value: no thresholds, not the defaults")
	assert.Empty(t, c.evictionHard)
}

func TestFlagErrors(t *testing.T) {
	required := []string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-name", "kk-node"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--node-name", "kk-node"}, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "/k"}, "--node-name is required"},
		{append([]string{"--port", "70000"}, required...), "--port=70000: not a port"},
		{append([]string{"--port", "-1"}, required...), "--port=-1: not a port"},
		{append([]string{"--node-ip", "nope"}, required...), "--node-ip=nope: not an IP address"},
		{append([]string{"--client-ca-file", "/ca.crt"}, required...), "--client-ca-file needs --port"},
		{append([]string{"--cluster-dns", "10.96.0.10,nope"}, required...), `"nope" is not an IP address`},
		{append([]string{"--cluster-domain", "Cluster_Local"}, required...), "--cluster-domain=Cluster_Local"},
		{append([]string{"--port", "1", "--tls-cert-file", "/s.crt"}, required...), "--tls-cert-file and --tls-private-key-file go together"},
		{append([]string{"--port", "1", "--tls-private-key-file", "/s.key"}, required...), "--tls-cert-file and --tls-private-key-file go together"},
		{append([]string{"--tls-cert-file", "/s.crt", "--tls-private-key-file", "/s.key"}, required...), "--tls-cert-file needs --port"},
		{append([]string{"--rotate-server-certificates"}, required...), "--rotate-server-certificates needs --port"},
		{append([]string{"--port", "1", "--rotate-server-certificates", "--tls-cert-file", "/s.crt", "--tls-private-key-file", "/s.key"}, required...), "give one"},
		{append([]string{"--bootstrap-kubeconfig", "/nonexistent/bootstrap.conf"}, required...), "bootstrap kubeconfig /nonexistent/bootstrap.conf"},
		{[]string{"--kubeconfig", "/k", "--node-name", "KK_Node"}, "--node-name=KK_Node"},
		{append([]string{"--no-such-flag"}, required...), "no-such-flag"},
		{append([]string{"--eviction-hard", "disk.available<1%"}, required...), "disk.available"},
		{append(required, "extra"), "unexpected arguments"},
		{required, "kubeconfig /nonexistent/kubeconfig"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestNodeJoins runs the node newNode builds against the fake clientset:
// VK registers it with upstream's labels and no taint, the agent's status
// turns it Ready, and the kubelet API answers over TLS, refusing a request
// without credentials.
func TestNodeJoins(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	c := &config{nodeName: "kk-node", rootDir: t.TempDir(), port: port, nodeIP: "127.0.0.1"}
	client := fake.NewClientset()
	nd, err := newNode(c, client, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Nil(t, nd.serving, "a self-signed certificate: no CSR")

	ctx, cancel := context.WithCancel(context.Background())
	nodes, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer nodes.Stop()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runNode(ctx, nd, slog.New(slog.DiscardHandler), &out) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("runNode did not return")
		}
	}()

	deadline := time.After(20 * time.Second)
	var node *v1.Node
	for node == nil {
		select {
		case ev := <-nodes.ResultChan():
			if got, ok := ev.Object.(*v1.Node); ok && ev.Type != watch.Deleted && ready(got) {
				node = got
			}
		case <-deadline:
			t.Fatal("the node did not turn Ready")
		}
	}
	assert.Equal(t, "kk-node", node.Labels[v1.LabelHostname])
	assert.NotEmpty(t, node.Labels[v1.LabelOSStable])
	assert.NotEmpty(t, node.Labels[v1.LabelArchStable])
	assert.Empty(t, node.Spec.Taints, "ordinary pods need no toleration")
	assert.Equal(t, int32(port), node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	assert.Contains(t, node.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.1"})
	assert.Contains(t, out.String(), "node registered")

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://127.0.0.1:" + strconv.Itoa(port) + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.FileExists(t, filepath.Join(c.rootDir, "pki", "kubelet.crt"))

}

// TestKubeletAPIClientCertificates serves the kubelet API's handler and
// TLS configuration apiOptions builds, with an API server that allows
// every SubjectAccessReview: a client certificate of --client-ca-file (the
// API server's kubelet-client one, which kubectl logs, exec and
// port-forward come with) gets in as its user, one of another CA does not.
func TestKubeletAPIClientCertificates(t *testing.T) {
	var (
		mu       sync.Mutex
		reviewed []authorizationv1.SubjectAccessReviewSpec
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
			http.NotFound(w, r)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reviewed = append(reviewed, sar.Spec)
		mu.Unlock()
		sar.Status.Allowed = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	defer api.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	require.NoError(t, err)

	caFile, clientCert := clientCA(t)
	_, otherCert := clientCA(t)
	probes := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "prober_probe_total 1\n") })
	opts, m, err := apiOptions(&config{nodeName: "kk-node", rootDir: t.TempDir(), port: 1, clientCAFile: caFile}, client, nil, probes, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Nil(t, m)
	var cfg nodeutil.NodeConfig
	for _, o := range opts {
		require.NoError(t, o(&cfg))
	}
	srv := httptest.NewUnstartedServer(cfg.Handler)
	srv.TLS = cfg.TLSConfig
	srv.StartTLS()
	defer srv.Close()

	getPath := func(path string, certs ...tls.Certificate) (int, string) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	get := func(certs ...tls.Certificate) int {
		code, _ := getPath("/pods", certs...)
		return code
	}
	assert.Equal(t, http.StatusUnauthorized, get(), "no credentials")
	assert.Equal(t, http.StatusUnauthorized, get(otherCert), "a certificate of another CA")
	mu.Lock()
	assert.Empty(t, reviewed, "nothing unauthenticated is reviewed")
	mu.Unlock()
	assert.NotEqual(t, http.StatusUnauthorized, get(clientCert), "the kubelet-client certificate")
	code, body := getPath("/metrics/probes", clientCert)
	assert.Equal(t, http.StatusOK, code, "the probe metrics")
	assert.Equal(t, "prober_probe_total 1\n", body)
	code, _ = getPath("/metrics/probes", otherCert)
	assert.Equal(t, http.StatusUnauthorized, code)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reviewed, 2)
	assert.Equal(t, "kube-apiserver-kubelet-client", reviewed[0].User)
	assert.Equal(t, []string{"kubelet-api-admin", "system:authenticated"}, reviewed[0].Groups)
	assert.Equal(t, "proxy", reviewed[0].ResourceAttributes.Subresource)
	assert.Equal(t, "metrics", reviewed[1].ResourceAttributes.Subresource, "/metrics/probes is nodes/metrics, as upstream")
}

// clientCA writes a CA certificate to a file and returns its path and a
// client certificate it signed, as the API server's kubelet-client one.
func clientCA(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	ca := newTestCA(t)
	der, key := ca.issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubelet-api-admin"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	path := filepath.Join(t.TempDir(), "client-ca.crt")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600))
	return path, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func ready(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// syncBuffer is stdout, written by runNode's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHelp: -h and --help print the usage and return flag.ErrHelp, which
// main turns into exit status 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var stderr bytes.Buffer
		err := run(t.Context(), []string{arg}, io.Discard, &stderr)
		require.ErrorIs(t, err, flag.ErrHelp, arg)
		assert.Contains(t, stderr.String(), "-kubeconfig", arg)
	}
}
