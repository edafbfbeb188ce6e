package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/server"
)

// Without certificate files, TLSConfig makes a self-signed pair under the
// certificate directory, as upstream's kubelet.crt and kubelet.key, and
// reuses it on the next start.
func TestTLSConfigSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	opts := server.TLSOptions{CertDir: dir, Host: "node1", IPs: []net.IP{net.ParseIP("192.0.2.10")}, DNSNames: []string{"node1.example"}}
	cfg, pool, err := server.TLSConfig(opts)
	require.NoError(t, err)
	assert.Nil(t, pool)
	assert.Equal(t, tls.NoClientCert, cfg.ClientAuth)
	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	for file, mode := range map[string]os.FileMode{"kubelet.key": 0o600, "kubelet.crt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Equal(t, mode, fi.Mode().Perm(), file)
	}
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	crt, err := os.ReadFile(filepath.Join(dir, "kubelet.crt"))
	require.NoError(t, err)
	var certs []*x509.Certificate
	for rest := crt; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		certs = append(certs, c)
	}
	require.Len(t, certs, 2, "the serving certificate and its CA")
	leaf, ca := certs[0], certs[1]
	assert.Regexp(t, `^node1@\d+$`, leaf.Subject.CommonName)
	assert.Regexp(t, `^node1-ca@\d+$`, ca.Subject.CommonName)
	assert.True(t, ca.IsCA)
	assert.Equal(t, []string{"node1", "node1.example"}, leaf.DNSNames)
	require.Len(t, leaf.IPAddresses, 1)
	assert.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("192.0.2.10")))
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node1.example"})
	assert.NoError(t, err)

	// The next start reuses the pair.
	_, _, err = server.TLSConfig(opts)
	require.NoError(t, err)
	again, err := os.ReadFile(filepath.Join(dir, "kubelet.crt"))
	require.NoError(t, err)
	assert.Equal(t, crt, again)
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	lone := filepath.Join(dir, "lone")
	require.NoError(t, os.MkdirAll(lone, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(lone, "kubelet.key"), []byte("key"), 0o600))
	empty := filepath.Join(dir, "empty.crt")
	require.NoError(t, os.WriteFile(empty, []byte("no PEM here"), 0o600))
	for _, tc := range []struct {
		name string
		opts server.TLSOptions
		err  string
	}{
		{"a certificate without its key", server.TLSOptions{CertFile: "a.crt"}, "tls: certificate and key must be supplied as a pair"},
		{"nothing at all", server.TLSOptions{}, "tls: no certificate: give CertFile and KeyFile, or CertDir"},
		{"a lone key in the directory", server.TLSOptions{CertDir: lone, Host: "node1"},
			"tls: error reading " + filepath.Join(lone, "kubelet.crt") + ", certificate and key must be supplied as a pair"},
		{"no host to name", server.TLSOptions{CertDir: filepath.Join(dir, "new")}, "tls: unable to generate self signed cert: no host name"},
		{"files that are missing", server.TLSOptions{CertFile: filepath.Join(dir, "x.crt"), KeyFile: filepath.Join(dir, "x.key")},
			"tls: stat " + filepath.Join(dir, "x.crt") + ": no such file or directory"},
		{"a client CA file without certificates", server.TLSOptions{CertDir: filepath.Join(dir, "ok"), Host: "node1", ClientCAFile: empty},
			"client CA: no certificate in " + empty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := server.TLSConfig(tc.opts)
			assert.EqualError(t, err, tc.err)
		})
	}
}

// Given files are used as they are, and a client CA makes the server ask
// for (not require) client certificates.
func TestTLSConfigFromFiles(t *testing.T) {
	dir := t.TempDir()
	_, _, err := server.TLSConfig(server.TLSOptions{CertDir: dir, Host: "127.0.0.1"})
	require.NoError(t, err)
	ca := newCA(t, "client-ca")
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	cfg, pool, err := server.TLSConfig(server.TLSOptions{
		CertFile: filepath.Join(dir, "kubelet.crt"), KeyFile: filepath.Join(dir, "kubelet.key"),
		ClientCAFile: caFile, MinVersion: tls.VersionTLS13,
	})
	require.NoError(t, err)
	require.NotNil(t, pool)
	assert.Equal(t, tls.RequestClientCert, cfg.ClientAuth)
	assert.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
	require.NotNil(t, cfg.GetCertificate, "a pair from files is reloaded")
	cert, err := cfg.GetCertificate(nil)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	require.Len(t, leaf.IPAddresses, 1)
	assert.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")), "an IP host is an IP SAN")
	_, err = ca.cert.Verify(x509.VerifyOptions{Roots: pool.ClientCAs()})
	assert.NoError(t, err, "the pool holds the client CA")
}
