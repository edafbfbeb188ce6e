package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// The certificate flags: --rotate-server-certificates serves the serving
// manager's certificate on the kubelet API instead of a self-signed one;
// --rotate-certificates rotates the pair a bootstrapped kubeconfig names,
// the API server client's connections following it;
// both, and --bootstrap-kubeconfig, need --kubeconfig.
func TestCertificateFlags(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	kubeconfig := kubeconfigFile(t, dir)
	current := filepath.Join(dir, "pki", "kubelet-client-current.pem")
	require.NoError(t, os.MkdirAll(filepath.Dir(current), 0o700))
	require.NoError(t, os.WriteFile(current, clientPair(t), 0o600))
	bootstrapped := filepath.Join(dir, "bootstrapped.conf")
	require.NoError(t, os.WriteFile(bootstrapped, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {client-certificate: `+current+`, client-key: `+current+`}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	base := []string{"--root-dir", root, "--cgroups-per-qos=false", "--enforce-node-allocatable", "none", "--hostname-override", "node1"}
	for _, tc := range []struct {
		name     string
		args     []string
		err      string // of parseFlags or options
		managers int
		getter   bool
		rotation bool // the API server client's connections follow the client certificate
	}{
		{name: "serving certificate by CSR", args: []string{"--kubeconfig", kubeconfig, "--rotate-server-certificates"}, managers: 1, getter: true},
		{name: "client rotation of a bootstrapped kubeconfig", args: []string{"--kubeconfig", bootstrapped, "--cert-dir", filepath.Join(dir, "pki"), "--rotate-certificates"}, managers: 1, rotation: true},
		{name: "both", args: []string{"--kubeconfig", bootstrapped, "--cert-dir", filepath.Join(dir, "pki"), "--rotate-certificates", "--rotate-server-certificates"}, managers: 2, getter: true, rotation: true},
		{name: "neither", args: []string{"--kubeconfig", kubeconfig}},
		{name: "rotation without a kubeconfig", args: []string{"--rotate-certificates"}, err: "rotateCertificates"},
		{name: "serving certificates without a kubeconfig", args: []string{"--rotate-server-certificates"}, err: "serverTLSBootstrap"},
		{name: "bootstrap without a kubeconfig", args: []string{"--bootstrap-kubeconfig", kubeconfig}, err: "--bootstrap-kubeconfig needs --kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{}, base...)
			if slices.Contains(tc.args, "--kubeconfig") {
				args = append(args, "--local-state", "")
			}
			c, err := parseFlags(append(args, tc.args...), io.Discard)
			if err == nil {
				o, _, oerr := options(c, io.Discard, slog.New(slog.DiscardHandler))
				err = oerr
				if err == nil {
					require.NotNil(t, o.HTTP.API)
					assert.Equal(t, tc.getter, o.HTTP.API.TLS.GetCertificate != nil)
					if tc.getter {
						assert.Empty(t, o.HTTP.API.TLS.CertDir, "no self-signed pair beside the getter")
					}
				}
			}
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, c.certManagers, tc.managers)
			assert.Equal(t, tc.rotation, c.clientRotation != nil)
		})
	}
}

// clientPair is a node's client certificate and its key, PEM, as
// kubelet-client-current.pem holds them.
func clientPair(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:node1", Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
}

// statusOf is a node whose status is set by the test.
type statusOf struct {
	st v1.NodeStatus
	ok bool
}

func (s *statusOf) NodeStatus() (v1.NodeStatus, bool) { return s.st, s.ok }

// The serving certificate's addresses are the node's name and --node-ip
// until the agent has a status with addresses, then the status's.
func TestServingAddressesFollowTheNode(t *testing.T) {
	dir := t.TempDir()
	c, err := parseFlags([]string{"--root-dir", filepath.Join(dir, "root"), "--local-state", "", "--cgroups-per-qos=false", "--enforce-node-allocatable", "none",
		"--hostname-override", "node1", "--node-ip", "192.0.2.10", "--kubeconfig", kubeconfigFile(t, dir), "--rotate-server-certificates"}, io.Discard)
	require.NoError(t, err)
	_, _, err = options(c, io.Discard, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, c.servingAddrs)
	configured := []v1.NodeAddress{{Type: v1.NodeHostName, Address: "node1"}, {Type: v1.NodeInternalIP, Address: "192.0.2.10"}}
	assert.Equal(t, configured, c.servingAddrs.addresses(), "before the agent")

	node := &statusOf{}
	c.servingAddrs.follow(node)
	assert.Equal(t, configured, c.servingAddrs.addresses(), "no status yet")
	detected := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.51.100.7"}, {Type: v1.NodeHostName, Address: "node1"}}
	node.st, node.ok = v1.NodeStatus{Addresses: detected}, true
	assert.Equal(t, detected, c.servingAddrs.addresses(), "the status's")
}

// managerRecorder is a certificate.Manager that records Start and Stop.
type managerRecorder struct{ started, stopped atomic.Bool }

func (m *managerRecorder) Start()                    { m.started.Store(true) }
func (m *managerRecorder) Stop()                     { m.stopped.Store(true) }
func (m *managerRecorder) Current() *tls.Certificate { return nil }
func (m *managerRecorder) ServerHealthy() bool       { return false }

// startCertificates starts the managers and the client rotation; its stop
// stops them once the rotation has returned (goleak checks it has).
func TestStartCertificates(t *testing.T) {
	m := &managerRecorder{}
	_, rot, err := apiserver.NewClientRotation(&rest.Config{Host: "https://127.0.0.1:6443"}, m, apiserver.ClientRotationOptions{})
	require.NoError(t, err)
	c := &config{certManagers: []certificate.Manager{m}, clientRotation: rot}
	stop := startCertificates(t.Context(), c)
	assert.True(t, m.started.Load())
	assert.False(t, m.stopped.Load())
	stop()
	assert.True(t, m.stopped.Load())
}
