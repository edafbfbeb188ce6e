package apiserver_test

import (
	"bufio"
	"bytes"
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
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// managerFake is a certificate.Manager whose Current the test sets.
type managerFake struct {
	current atomic.Pointer[tls.Certificate]
}

var _ certificate.Manager = (*managerFake)(nil)

func (m *managerFake) Start()                    {}
func (m *managerFake) Stop()                     {}
func (m *managerFake) Current() *tls.Certificate { return m.current.Load() }
func (m *managerFake) ServerHealthy() bool       { return true }

// clientCert is a node's client certificate, serial, issued by s's CA.
func (s *csrSigner) clientCert(t *testing.T, serial int64, notAfter time.Time) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "system:node:node1", Organization: []string{"system:nodes"}},
		NotBefore: notAfter.Add(-24 * time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, &key.PublicKey, s.caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// peerServer is an API server that verifies client certificates of s's CA
// when given: /who answers the serial of the one presented, /watch sends it
// and then holds the response open, as a watch does; no certificate, 401.
func peerServer(t *testing.T, s *csrSigner) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, r.TLS.PeerCertificates[0].SerialNumber)
		if r.URL.Path == "/watch" {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	pool := x509.NewCertPool()
	pool.AddCert(s.ca)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// A client made by NewClientRotation presents the manager's current
// certificate; when the manager hands out another, the next read of it
// cuts an open watch and the next request presents the new one; when it
// has none left, the connections are cut too and logged at Error, and the
// process goes on; a certificate that comes back is used.
func TestClientRotation(t *testing.T) {
	s := newCSRSigner(t, time.Hour)
	srv := peerServer(t, s)
	fc := testclock.NewFakeClock(time.Now())
	m := &managerFake{}
	m.current.Store(s.clientCert(t, 101, fc.Now().Add(time.Hour)))
	var logs bytes.Buffer
	cfg, rot, err := apiserver.NewClientRotation(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}},
		m, apiserver.ClientRotationOptions{Clock: fc, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer rot.CloseAll()
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- rot.Run(ctx) }()
	require.Eventually(t, fc.HasWaiters, 10*time.Second, time.Millisecond, "Run waits on its ticker")

	who := func() string {
		t.Helper()
		resp, err := hc.Get(srv.URL + "/who")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return strings.TrimSpace(string(body))
	}
	// watch opens a watch, returns the serial it was opened with and a
	// channel that is closed when the server's stream is cut.
	watch := func() (string, <-chan struct{}) {
		t.Helper()
		resp, err := hc.Get(srv.URL + "/watch")
		require.NoError(t, err)
		r := bufio.NewReader(resp.Body)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		cut := make(chan struct{})
		go func() {
			defer close(cut)
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, r)
		}()
		return strings.TrimSpace(line), cut
	}
	// stepUntil ticks Run's clock until done: a fake ticker drops a tick
	// Run has not taken yet, and a tick with nothing changed does nothing.
	stepUntil := func(done func() bool, why string) {
		t.Helper()
		require.Eventually(t, func() bool { fc.Step(10 * time.Second); return done() }, 10*time.Second, time.Millisecond, why)
	}
	isCut := func(cut <-chan struct{}) func() bool {
		return func() bool {
			select {
			case <-cut:
				return true
			default:
				return false
			}
		}
	}

	assert.Equal(t, "101", who())
	hc.CloseIdleConnections() // only the watch's connection is open
	serial, cut := watch()
	assert.Equal(t, "101", serial)

	m.current.Store(s.clientCert(t, 102, fc.Now().Add(time.Hour)))
	stepUntil(isCut(cut), "the watch is cut when the certificate rotates")
	assert.Equal(t, "102", who(), "the next request presents the new certificate")

	hc.CloseIdleConnections()
	_, cut = watch()
	m.current.Store(nil) // expired, none issued: client-go's manager returns nil
	stepUntil(isCut(cut), "the watch is cut when the certificate is lost")
	assert.Equal(t, "Unauthorized", who(), "no certificate to present")

	m.current.Store(s.clientCert(t, 103, fc.Now().Add(time.Hour)))
	stepUntil(func() bool { return who() == "103" }, "a certificate that comes back is used")

	cancel()
	require.NoError(t, <-ran)
	log := logs.String()
	assert.Equal(t, 2, strings.Count(log, "level=INFO msg=\"client certificate rotated"), "102 and 103, however many ticks: %s", log)
	assert.Equal(t, 1, strings.Count(log, "level=ERROR msg=\"the client certificate has expired and no new one was issued"), log)
	assert.NotContains(t, log, "PRIVATE KEY")
}

// NewClientRotation refuses a configuration with a Transport of its own
// and a missing manager.
func TestNewClientRotationRefuses(t *testing.T) {
	_, _, err := apiserver.NewClientRotation(&rest.Config{Host: "https://api.example:6443", Transport: http.DefaultTransport}, &managerFake{}, apiserver.ClientRotationOptions{})
	assert.ErrorContains(t, err, "Transport of its own")
	_, _, err = apiserver.NewClientRotation(&rest.Config{Host: "https://api.example:6443"}, nil, apiserver.ClientRotationOptions{})
	assert.ErrorContains(t, err, "no certificate manager")
}
