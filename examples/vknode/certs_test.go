package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
)

func TestAgentOptions(t *testing.T) {
	c := &config{rootDir: "/r", podLogsDir: "/l", nodeIP: "10.123.0.11",
		clusterDNS: []string{"10.96.0.10"}, clusterDomain: "cluster.local"}
	o := agentOptions(c, nil)
	assert.Equal(t, []string{"10.96.0.10"}, o.Node.ClusterDNS, "ClusterFirst pods' nameservers")
	assert.Equal(t, "cluster.local", o.Node.ClusterDomain)
	assert.Equal(t, []string{"10.123.0.11"}, o.Node.HostIPs)
	assert.Equal(t, "/l", o.Logs.Dir)
	assert.False(t, o.Cgroups.PerQOS)

	o = agentOptions(&config{rootDir: "/r", cgroupsPerQOS: true}, nil)
	assert.False(t, o.Cgroups.PerQOS, "no QoS cgroups for the embedded fake runtime")
	assert.Empty(t, o.Node.ClusterDNS)
}

// TestServingCertificateFiles: with --tls-cert-file the kubelet API serves
// that certificate, which a client verifies with its CA for the node's IP.
func TestServingCertificateFiles(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	der, key := ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:kk-node"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))

	c := &config{nodeName: "kk-node", rootDir: t.TempDir(), port: 1, tlsCertFile: certFile, tlsKeyFile: keyFile}
	opts, m, err := apiOptions(c, fake.NewClientset(), nil, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Nil(t, m)
	srv := serve(t, opts)
	assert.Equal(t, der, handshake(t, srv, ca.pool()).Raw)
	assert.NoFileExists(t, filepath.Join(c.pkiDir(), "kubelet.crt"), "no self-signed certificate")
}

// TestServingCertificateByCSR: with --rotate-server-certificates the node
// asks for its serving certificate by a kubernetes.io/kubelet-serving CSR
// for its name and IP; nothing is served until it is issued, then the
// issued certificate is, and kept under the cert dir.
func TestServingCertificateByCSR(t *testing.T) {
	ca := newTestCA(t)
	client := fake.NewClientset()
	c := &config{nodeName: "kk-node", rootDir: t.TempDir(), port: 1, nodeIP: "127.0.0.1", rotateServerCertificates: true}
	opts, m, err := apiOptions(c, client, addressesOf(c, &atomic.Pointer[vkprovider.Provider]{}), http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, m)
	srv := serve(t, opts)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	csrs, err := client.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer csrs.Stop()
	m.Start()
	defer m.Stop()
	var csr *certificatesv1.CertificateSigningRequest
	select {
	case ev := <-csrs.ResultChan():
		csr = ev.Object.(*certificatesv1.CertificateSigningRequest)
	case <-ctx.Done():
		t.Fatal("no CSR")
	}
	assert.Equal(t, certificatesv1.KubeletServingSignerName, csr.Spec.SignerName)
	block, _ := pem.Decode(csr.Spec.Request)
	require.NotNil(t, block)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "system:node:kk-node", req.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, req.Subject.Organization)
	assert.Equal(t, []string{"kk-node"}, req.DNSNames)
	require.Len(t, req.IPAddresses, 1)
	assert.Equal(t, "127.0.0.1", req.IPAddresses[0].String())

	_, err = tls.Dial("tcp", srv, &tls.Config{RootCAs: ca.pool()})
	assert.Error(t, err, "no certificate before the CSR is issued")

	// Approve and issue it, as kube-controller-manager's signer would.
	der := ca.sign(t, req)
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue}}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	_, err = client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	require.NoError(t, err)
	for m.Current() == nil {
		select {
		case <-ctx.Done():
			t.Fatal("the issued certificate was not taken")
		case <-time.After(50 * time.Millisecond):
		}
	}
	assert.Equal(t, der, handshake(t, srv, ca.pool()).Raw)
	assert.FileExists(t, filepath.Join(c.pkiDir(), "kubelet-server-current.pem"))
}

func TestServingAddresses(t *testing.T) {
	var p atomic.Pointer[vkprovider.Provider]
	assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeHostName, Address: "kk-node"}, {Type: v1.NodeInternalIP, Address: "10.123.0.11"}},
		addressesOf(&config{nodeName: "kk-node", nodeIP: "10.123.0.11"}, &p)())
	assert.Equal(t, []v1.NodeAddress{{Type: v1.NodeHostName, Address: "kk-node"}}, addressesOf(&config{nodeName: "kk-node"}, &p)(),
		"no --node-ip and no status yet")
}

// serve serves the kubelet API's handler with the TLS configuration opts
// give, until the test ends, and returns its address. (Not httptest's
// server: it adds a certificate of its own, which crypto/tls prefers to
// GetCertificate's when the client sends no server name.)
func serve(t *testing.T, opts []nodeutil.NodeOpt) string {
	t.Helper()
	var cfg nodeutil.NodeConfig
	for _, o := range opts {
		require.NoError(t, o(&cfg))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: cfg.Handler, TLSConfig: cfg.TLSConfig, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeTLS(l, "", "")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return l.Addr().String()
}

// handshake connects to addr verifying its certificate with roots for
// 127.0.0.1 and returns the certificate it served.
func handshake(t *testing.T, addr string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// testCA is a CA, as the cluster's that the API server verifies kubelets with.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// issue signs tmpl for a new key and returns the certificate and key.
func (ca *testCA) issue(t *testing.T, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return ca.create(t, tmpl, &key.PublicKey), key
}

// sign issues a serving certificate for req's subject, names and key.
func (ca *testCA) sign(t *testing.T, req *x509.CertificateRequest) []byte {
	t.Helper()
	return ca.create(t, &x509.Certificate{Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, req.PublicKey)
}

func (ca *testCA) create(t *testing.T, tmpl *x509.Certificate, pub any) []byte {
	t.Helper()
	now := time.Now()
	tmpl.SerialNumber = big.NewInt(now.UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	require.NoError(t, err)
	return der
}
