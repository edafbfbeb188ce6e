package server_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/tlstest"
	"github.com/kubeletkit/kubeletkit/server"
)

// served is the common name of the certificate a handshake with cfg sees,
// or the client's handshake error.
func served(t *testing.T, cfg *tls.Config) (string, error) {
	t.Helper()
	leaf, err := tlstest.Handshake(cfg)
	if err != nil {
		return "", err
	}
	return leaf.Subject.CommonName, nil
}

// pairPEM is a serving certificate named cn, as certificate and key PEM.
func pairPEM(t *testing.T, ca *testCA, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	c := ca.issue(t, cn, nil, x509.ExtKeyUsageServerAuth)
	der, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// replace writes data to a new file renamed over path, as a rotation does.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".new", data, 0o600))
	require.NoError(t, os.Rename(path+".new", path))
}

// A pair given by CertFile and KeyFile is looked at again at a handshake
// once ReloadInterval has passed, and a new pair is served without a
// restart; a pair seen half rotated, or files gone, leave the old one
// served (and logged, without the key).
func TestTLSConfigReloadsFiles(t *testing.T) {
	ca := newCA(t, "serving-ca")
	oldCert, oldKey := pairPEM(t, ca, "old")
	newCert, newKey := pairPEM(t, ca, "new")
	type step struct {
		do      func(t *testing.T, certFile, keyFile string)
		advance time.Duration
		want    string
	}
	rotate := func(t *testing.T, certFile, keyFile string) {
		replace(t, certFile, newCert)
		replace(t, keyFile, newKey)
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		steps    []step
		logged   string
	}{
		{name: "a rotation, once the interval has passed", steps: []step{
			{advance: time.Second, want: "old"},
			{do: rotate, advance: server.DefaultReloadInterval, want: "new"},
		}},
		{name: "a rotation, not before the interval", interval: 10 * time.Second, steps: []step{
			{do: rotate, advance: 9 * time.Second, want: "old"},
			{advance: time.Second, want: "new"},
		}},
		{name: "the content rewritten in place", steps: []step{
			{do: func(t *testing.T, certFile, keyFile string) {
				require.NoError(t, os.WriteFile(keyFile, newKey, 0o600))
				require.NoError(t, os.WriteFile(certFile, newCert, 0o600))
			}, advance: 5 * time.Second, want: "new"},
		}},
		{name: "half a rotation waits for the key", steps: []step{
			{do: func(t *testing.T, certFile, _ string) { replace(t, certFile, newCert) }, advance: 5 * time.Second, want: "old"},
			{do: func(t *testing.T, _, keyFile string) { replace(t, keyFile, newKey) }, advance: 5 * time.Second, want: "new"},
		}, logged: "private key does not match public key"},
		{name: "files removed", steps: []step{
			{do: func(t *testing.T, certFile, keyFile string) {
				require.NoError(t, os.Remove(certFile))
				require.NoError(t, os.Remove(keyFile))
			}, advance: 5 * time.Second, want: "old"},
			{do: rotate, advance: 5 * time.Second, want: "new"},
		}, logged: "no such file or directory"},
		{name: "reloading off", interval: -1, steps: []step{
			{do: rotate, advance: time.Hour, want: "old"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			require.NoError(t, os.WriteFile(certFile, oldCert, 0o600))
			require.NoError(t, os.WriteFile(keyFile, oldKey, 0o600))
			clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
			var logs bytes.Buffer
			cfg, _, err := server.TLSConfig(server.TLSOptions{CertFile: certFile, KeyFile: keyFile,
				ReloadInterval: tc.interval, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			got, err := served(t, cfg)
			require.NoError(t, err)
			require.Equal(t, "old", got)
			for i, s := range tc.steps {
				if s.do != nil {
					s.do(t, certFile, keyFile)
				}
				clk.SetTime(clk.Now().Add(s.advance))
				got, err := served(t, cfg)
				require.NoError(t, err, "step %d", i)
				assert.Equal(t, s.want, got, "step %d", i)
			}
			if tc.logged == "" {
				assert.Empty(t, logs.String())
			} else {
				assert.Contains(t, logs.String(), "serving certificate not reloaded")
				assert.Contains(t, logs.String(), tc.logged)
			}
			assert.NotContains(t, logs.String(), "PRIVATE KEY")
		})
	}
}

// A certificate getter is asked at each handshake: what it returns next
// is served next, and its error fails that handshake only.
func TestTLSConfigGetCertificate(t *testing.T) {
	ca := newCA(t, "serving-ca")
	one := ca.issue(t, "one", nil, x509.ExtKeyUsageServerAuth)
	two := ca.issue(t, "two", nil, x509.ExtKeyUsageServerAuth)
	var current atomic.Pointer[tls.Certificate]
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if c := current.Load(); c != nil {
			return c, nil
		}
		return nil, errors.New("no serving certificate yet")
	}
	cfg, _, err := server.TLSConfig(server.TLSOptions{GetCertificate: get})
	require.NoError(t, err)
	assert.Empty(t, cfg.Certificates)
	for _, tc := range []struct {
		name    string
		current *tls.Certificate
		want    string
	}{
		{name: "none yet"},
		{name: "the first", current: &one, want: "one"},
		{name: "rotated", current: &two, want: "two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current.Store(tc.current)
			got, err := served(t, cfg)
			if tc.want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	_, _, err = server.TLSConfig(server.TLSOptions{GetCertificate: get, CertDir: t.TempDir()})
	assert.EqualError(t, err, "tls: a certificate getter excludes CertFile, KeyFile and CertDir")
}
