package server_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/server"
)

// verifies reports whether a client certificate of ca verifies against
// the CAs p gives now.
func verifies(p server.CAProvider, ca *testCA) bool {
	pool := p.ClientCAs()
	if pool == nil {
		return false
	}
	_, err := ca.cert.Verify(x509.VerifyOptions{Roots: pool})
	return err == nil
}

// A client CA file is read again once the interval has passed on the
// clock, never before; a new bundle replaces the CAs, and a missing,
// unreadable or empty file keeps the CAs loaded before (and is logged).
func TestClientCAFileReload(t *testing.T) {
	a, b := newCA(t, "ca-a"), newCA(t, "ca-b")
	both := append(append([]byte{}, a.pem...), b.pem...)
	const loaded = "Loaded a new client CA bundle"
	type step struct {
		write  []byte // the file's new content; nil leaves it
		rm     bool   // the file removed
		after  time.Duration
		wantA  bool
		wantB  bool
		logged string // a line logged; empty: nothing is
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		steps    []step
	}{
		{name: "before the interval the old CAs", steps: []step{
			{write: b.pem, after: 4 * time.Second, wantA: true},
			{after: time.Second, wantB: true, logged: loaded},
		}},
		{name: "CA added then the old one removed", steps: []step{
			{write: both, after: 5 * time.Second, wantA: true, wantB: true, logged: loaded},
			{write: b.pem, after: 5 * time.Second, wantB: true, logged: loaded},
		}},
		{name: "missing file keeps the last good", steps: []step{
			{rm: true, after: 5 * time.Second, wantA: true, logged: "Client CA file not reloaded"},
			{write: b.pem, after: 5 * time.Second, wantB: true, logged: loaded},
		}},
		{name: "no certificate keeps the last good", steps: []step{
			{write: []byte("not a certificate\n"), after: 5 * time.Second, wantA: true, logged: "no certificate in"},
			{write: b.pem, after: time.Second, wantA: true},
			{after: 4 * time.Second, wantB: true, logged: loaded},
		}},
		{name: "unchanged content logs nothing", steps: []step{
			{write: a.pem, after: time.Minute, wantA: true},
		}},
		{name: "custom interval", interval: time.Minute, steps: []step{
			{write: b.pem, after: 30 * time.Second, wantA: true},
			{after: 30 * time.Second, wantB: true, logged: loaded},
		}},
		{name: "negative interval never reads again", interval: -1, steps: []step{
			{write: b.pem, after: time.Hour, wantA: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ca.crt")
			require.NoError(t, os.WriteFile(file, a.pem, 0o600))
			clk := clocktesting.NewFakePassiveClock(time.Unix(1700000000, 0))
			var logs bytes.Buffer
			f, err := server.NewClientCAFile(server.ClientCAFileOptions{File: file, Interval: tc.interval, Clock: clk,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			assert.Equal(t, file, f.File())
			require.True(t, verifies(f, a))
			for i, s := range tc.steps {
				logs.Reset()
				switch {
				case s.rm:
					require.NoError(t, os.Remove(file))
				case s.write != nil:
					replace(t, file, s.write)
				}
				clk.SetTime(clk.Now().Add(s.after))
				assert.Equal(t, s.wantA, verifies(f, a), "step %d: ca-a", i)
				assert.Equal(t, s.wantB, verifies(f, b), "step %d: ca-b", i)
				if s.logged != "" {
					assert.Contains(t, logs.String(), s.logged, "step %d", i)
					assert.Contains(t, logs.String(), file, "step %d: the file is named", i)
				} else {
					assert.Empty(t, logs.String(), "step %d", i)
				}
			}
		})
	}
}

// A client CA file that cannot be read, or holds no certificate, fails at
// the start; a nil ClientCAFile gives no CAs.
func TestNewClientCAFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.crt")
	require.NoError(t, os.WriteFile(bad, []byte("junk"), 0o600))
	for _, tc := range []struct{ name, file, want string }{
		{"no file", "", "client CA: no file"},
		{"missing", filepath.Join(dir, "missing.crt"), "client CA: open"},
		{"no certificate", bad, "client CA: no certificate in " + bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.NewClientCAFile(server.ClientCAFileOptions{File: tc.file})
			assert.ErrorContains(t, err, tc.want)
		})
	}
	var none *server.ClientCAFile
	assert.Nil(t, none.ClientCAs())
}

// Over TLS with two CAs: the kubelet API's client CA file changes from CA a
// to CA b; once the interval has passed, a client of b is accepted (the
// handshake now names b, so the client sends its certificate) and a client
// of a, removed, is refused; no restart.
func TestServeTLSClientCAReload(t *testing.T) {
	dir := t.TempDir()
	a, b := newCA(t, "ca-a"), newCA(t, "ca-b")
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, a.pem, 0o600))
	clk := clocktesting.NewFakePassiveClock(time.Now())
	serve := serveWithClientCA(t, dir, caFile, clk)
	get := func(cert tls.Certificate) int {
		code, _ := serve(&cert)
		return code
	}
	ofA, ofB := a.issue(t, "apiserver", nil), b.issue(t, "apiserver", nil)
	assert.Equal(t, http.StatusOK, get(ofA), "a client of the CA in the file")
	assert.Equal(t, http.StatusUnauthorized, get(ofB), "a client of a CA not in the file")

	replace(t, caFile, b.pem)
	assert.Equal(t, http.StatusOK, get(ofA), "within the interval the file is not read again")
	clk.SetTime(clk.Now().Add(server.DefaultReloadInterval))
	assert.Equal(t, http.StatusOK, get(ofB), "a client of the new CA, without a restart")
	assert.Equal(t, http.StatusUnauthorized, get(ofA), "a client of the removed CA")

	require.NoError(t, os.Remove(caFile))
	clk.SetTime(clk.Now().Add(server.DefaultReloadInterval))
	assert.Equal(t, http.StatusOK, get(ofB), "a missing file keeps the CAs loaded before")
}
