package apiserver_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/internal/tlstest"
	"github.com/kubeletkit/kubeletkit/server"
)

// csrSigner is a control plane's CSR approver and signer over a fake
// clientset: each CSR created is refused, denied or approved and signed by
// its CA for lifetime, as refuse says; what it saw is kept.
type csrSigner struct {
	ca       *x509.Certificate
	caKey    *ecdsa.PrivateKey
	caPEM    []byte
	lifetime time.Duration

	mu      sync.Mutex
	refuse  []string                                    // per CSR created in order: "unauthorized", "deny", "pending", or "" to sign; past the end, sign
	created []*certificatesv1.CertificateSigningRequest // each create, refused or not; not one that exists already
	configs []*rest.Config
	fake    *fake.Clientset
}

func newCSRSigner(t *testing.T, lifetime time.Duration, refuse ...string) *csrSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &csrSigner{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		lifetime: lifetime, refuse: refuse}
}

// client is a fake clientset whose CSRs s decides. The fake ignores field
// selectors: its lists and watches of CSRs honour metadata.name here, as
// an API server does for client-go's wait.
func (s *csrSigner) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		req := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.Name != "" {
			if _, err := c.Tracker().Get(a.GetResource(), "", req.Name); err == nil {
				return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), req.Name)
			}
		}
		n := len(s.created)
		var verdict string
		if n < len(s.refuse) {
			verdict = s.refuse[n]
		}
		if verdict == "unauthorized" {
			s.created = append(s.created, req.DeepCopy())
			return true, nil, apierrors.NewUnauthorized("bootstrap token expired")
		}
		if req.Name == "" {
			req.Name = fmt.Sprintf("%s%d", req.GenerateName, n)
		}
		req.UID = types.UID(fmt.Sprintf("uid-%d", n))
		switch verdict {
		case "deny":
			req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "NotMyNode", Message: "not a node of this cluster"})
		case "pending":
		default:
			s.approveAndSign(req)
		}
		s.created = append(s.created, req.DeepCopy())
		return false, nil, nil
	})
	named := func(f fields.Selector) string {
		if f == nil {
			return ""
		}
		name, _ := f.RequiresExactMatch("metadata.name")
		return name
	}
	c.PrependReactor("list", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := named(a.(k8stesting.ListAction).GetListRestrictions().Fields)
		obj, err := c.Tracker().List(a.GetResource(), a.GetResource().GroupVersion().WithKind("CertificateSigningRequest"), "")
		if err != nil || name == "" {
			return true, obj, err
		}
		l := obj.(*certificatesv1.CertificateSigningRequestList)
		var kept []certificatesv1.CertificateSigningRequest
		for _, r := range l.Items {
			if r.Name == name {
				kept = append(kept, r)
			}
		}
		l.Items = kept
		return true, l, nil
	})
	c.PrependWatchReactor("certificatesigningrequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		name := named(a.(k8stesting.WatchAction).GetWatchRestrictions().Fields)
		w, err := c.Tracker().Watch(a.GetResource(), "")
		if err != nil || name == "" {
			return true, w, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			r, ok := e.Object.(*certificatesv1.CertificateSigningRequest)
			return e, !ok || r.Name == name
		}), nil
	})
	s.fake = c
	return c
}

// approveAndSign approves req and issues its certificate.
func (s *csrSigner) approveAndSign(req *certificatesv1.CertificateSigningRequest) {
	req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "AutoApproved"})
	req.Status.Certificate = s.sign(req)
}

// approve approves and signs the pending CSR name, as a control plane's
// approver and signer do later.
func (s *csrSigner) approve(t *testing.T, name string) {
	t.Helper()
	csrs := s.fake.CertificatesV1().CertificateSigningRequests()
	req, err := csrs.Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	s.mu.Lock()
	s.approveAndSign(req)
	s.mu.Unlock()
	_, err = csrs.UpdateStatus(t.Context(), req, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// objects are the CSR objects the fake API server holds.
func (s *csrSigner) objects(t *testing.T) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	l, err := s.fake.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}

// sign issues the CSR's certificate: its subject and SANs, its usages.
func (s *csrSigner) sign(req *certificatesv1.CertificateSigningRequest) []byte {
	b, _ := pem.Decode(req.Spec.Request)
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(len(s.created) + 2)), Subject: cr.Subject,
		DNSNames: cr.DNSNames, IPAddresses: cr.IPAddresses, NotBefore: now, NotAfter: now.Add(s.lifetime)}
	for _, u := range req.Spec.Usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, cr.PublicKey, s.caKey)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func (s *csrSigner) requests() []*certificatesv1.CertificateSigningRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*certificatesv1.CertificateSigningRequest(nil), s.created...)
}

// certOptions are a node's certificate options over a bootstrap kubeconfig
// with a token, every client the fake of s.
func certOptions(t *testing.T, s *csrSigner, logs *bytes.Buffer) apiserver.CertificateOptions {
	t.Helper()
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap-kubelet.conf")
	require.NoError(t, os.WriteFile(boot, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kubernetes, cluster: {server: "https://api.example:6443", certificate-authority-data: %q}}]
users: [{name: tls-bootstrap-token-user, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: bootstrap, context: {cluster: kubernetes, user: tls-bootstrap-token-user}}]
current-context: bootstrap
`, toBase64(s.caPEM))), 0o600))
	client := s.client()
	return apiserver.CertificateOptions{
		NodeName: "node1", BootstrapKubeconfig: boot,
		Kubeconfig: filepath.Join(dir, "kubelet.conf"), CertDir: filepath.Join(dir, "pki"),
		NewClient: func(c *rest.Config) (kubernetes.Interface, error) {
			s.mu.Lock()
			s.configs = append(s.configs, c)
			s.mu.Unlock()
			return client, nil
		},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
}

func toBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// leafOf reads the first certificate of a PEM file.
func leafOf(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		require.NotNil(t, b, "no certificate in %s", file)
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			require.NoError(t, err)
			return c
		}
	}
}

// A node with only a bootstrap token gets its client certificate by CSR:
// the pair stored under the cert dir (0600, behind the current symlink),
// a kubeconfig naming it; a valid kubeconfig is used as it is, an expired
// one bootstraps again.
func TestBootstrapClientCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCSRSigner(t, 24*time.Hour)
		var logs bytes.Buffer
		o := certOptions(t, s, &logs)
		require.NoError(t, apiserver.Bootstrap(t.Context(), o))

		reqs := s.requests()
		require.Len(t, reqs, 1)
		assert.Equal(t, "kubernetes.io/kube-apiserver-client-kubelet", reqs[0].Spec.SignerName)
		assert.Equal(t, []certificatesv1.KeyUsage{"digital signature", "client auth"}, reqs[0].Spec.Usages)
		assert.Regexp(t, `^node-csr-[A-Za-z0-9_-]{43}$`, reqs[0].Name, "named after its key, subject and usages")
		_, err := os.Stat(filepath.Join(o.CertDir, apiserver.PendingKeyFile))
		assert.ErrorIs(t, err, os.ErrNotExist, "the pending key is gone once the certificate is stored")
		require.Len(t, s.configs, 1)
		assert.Equal(t, "abcdef.0123456789abcdef", s.configs[0].BearerToken, "the CSR is sent with the bootstrap token")

		kc, err := clientcmd.LoadFromFile(o.Kubeconfig)
		require.NoError(t, err)
		current := filepath.Join(o.CertDir, "kubelet-client-current.pem")
		auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
		assert.Equal(t, current, auth.ClientCertificate)
		assert.Equal(t, current, auth.ClientKey)
		cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
		assert.Equal(t, "https://api.example:6443", cluster.Server)
		assert.Equal(t, s.caPEM, cluster.CertificateAuthorityData)
		target, err := os.Readlink(current)
		require.NoError(t, err)
		assert.Regexp(t, `kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$`, target)
		for _, f := range []string{o.Kubeconfig, current} {
			fi, err := os.Stat(f)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
		}
		leaf := leafOf(t, current)
		assert.Equal(t, "system:node:node1", leaf.Subject.CommonName)
		assert.Equal(t, []string{"system:nodes"}, leaf.Subject.Organization)
		assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, leaf.ExtKeyUsage)

		// Valid: used as it is, not even rewritten.
		cluster.Server = "https://api2.example:6443"
		require.NoError(t, clientcmd.WriteToFile(*kc, o.Kubeconfig))
		require.NoError(t, apiserver.Bootstrap(t.Context(), o))
		assert.Len(t, s.requests(), 1, "no CSR while the kubeconfig's certificate is valid")
		kc, err = clientcmd.LoadFromFile(o.Kubeconfig)
		require.NoError(t, err)
		assert.Equal(t, "https://api2.example:6443", kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)
		// Expired: bootstrapped again.
		time.Sleep(25 * time.Hour)
		require.NoError(t, apiserver.Bootstrap(t.Context(), o))
		assert.Len(t, s.requests(), 2, "a new CSR once it has expired")
		assert.NotEqual(t, leaf.SerialNumber, leafOf(t, current).SerialNumber)
		assert.NotContains(t, logs.String(), "PRIVATE KEY")
	})
}

// A token the API server refuses and a CSR denied are errors that name
// what failed (the refused token at Error, saying so plainly); Bootstrap
// tries again after 2s, 4s, ... until a certificate is issued, and writes
// nothing before; stopped, it returns the last error and leaves the
// kubeconfig there was and the pending key. A denied CSR's key is dropped:
// the next CSR has a new key and name.
func TestBootstrapRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  []string
		stopAt  time.Duration // 0: run to success
		logged  []string
		waited  time.Duration
		err     string
		written bool
		newKey  bool
	}{
		{name: "a token refused, then accepted", refuse: []string{"unauthorized", "unauthorized"},
			logged: []string{"level=ERROR", "the API server refused the credentials of the bootstrap kubeconfig " + bootName + " (401 Unauthorized): its bootstrap token may be wrong or expired",
				"request client certificate: cannot create certificate signing request: bootstrap token expired", "retryAfter=2s", "retryAfter=4s"},
			waited: 6 * time.Second, written: true},
		{name: "a CSR denied, then approved", refuse: []string{"deny"},
			logged: []string{"level=WARN", "wait for client certificate of CSR node-csr-", ": cannot watch on the certificate signing request: certificate signing request is denied, reason: NotMyNode, message: not a node of this cluster"},
			waited: 2 * time.Second, written: true, newKey: true},
		{name: "a token always refused, stopped", refuse: []string{"unauthorized", "unauthorized", "unauthorized", "unauthorized"}, stopAt: 10 * time.Second,
			logged: []string{"retryAfter=2s", "retryAfter=4s", "retryAfter=8s"},
			err:    "bootstrap: request client certificate: cannot create certificate signing request: bootstrap token expired (stopped: context deadline exceeded)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newCSRSigner(t, time.Hour, tc.refuse...)
				var logs bytes.Buffer
				o := certOptions(t, s, &logs)
				stale := []byte("apiVersion: v1\nkind: Config\nusers: [{name: u, user: {client-certificate-data: bm90IGEgY2VydA==}}]\n")
				require.NoError(t, os.WriteFile(o.Kubeconfig, stale, 0o600))
				ctx := t.Context()
				if tc.stopAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.stopAt)
					defer cancel()
				}
				start := time.Now()
				err := apiserver.Bootstrap(ctx, o)
				for _, l := range tc.logged {
					assert.Contains(t, logs.String(), strings.ReplaceAll(l, bootName, o.BootstrapKubeconfig))
				}
				kc, rerr := os.ReadFile(o.Kubeconfig)
				require.NoError(t, rerr)
				reqs := s.requests()
				if tc.err != "" {
					assert.EqualError(t, err, tc.err)
					assert.Equal(t, stale, kc, "the kubeconfig there was is left")
					assert.FileExists(t, filepath.Join(o.CertDir, apiserver.PendingKeyFile), "the pending key is kept")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.waited, time.Since(start))
				assert.NotEqual(t, stale, kc)
				require.Len(t, reqs, len(tc.refuse)+1)
				assert.Equal(t, tc.newKey, reqs[0].Name != reqs[len(reqs)-1].Name, "a new key, so a new CSR, only after a CSR that gives nothing")
			})
		})
	}
}

// bootName stands for the bootstrap kubeconfig's path in expected logs.
const bootName = "BOOTSTRAP-KUBECONFIG"

// bootstrapped is a node that Bootstrap gave a certificate of s's for
// lifetime: s, the node's options and its logs.
func bootstrapped(t *testing.T, lifetime time.Duration) (*csrSigner, apiserver.CertificateOptions, *bytes.Buffer) {
	t.Helper()
	s := newCSRSigner(t, lifetime)
	logs := &bytes.Buffer{}
	o := certOptions(t, s, logs)
	require.NoError(t, apiserver.Bootstrap(t.Context(), o))
	return s, o, logs
}

// client-go's managers, driven in a synctest bubble (their timers are the
// bubble's): the client certificate is renewed before it expires, behind
// the same kubeconfig; the serving certificate comes by a kubelet-serving
// CSR with the node's addresses and the kubelet API serves each new one
// without a restart.
func TestCertificateRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, o, _ := bootstrapped(t, time.Hour)
		current := filepath.Join(o.CertDir, "kubelet-client-current.pem")
		first := leafOf(t, current)

		cm, err := apiserver.NewClientCertificateManager(o)
		require.NoError(t, err)
		client, err := o.NewClient(&rest.Config{})
		require.NoError(t, err)
		addrs := []v1.NodeAddress{{Type: v1.NodeHostName, Address: "node1"}, {Type: v1.NodeInternalIP, Address: "192.0.2.10"}}
		sm, err := apiserver.NewServingCertificateManager(o, client, func() []v1.NodeAddress { return addrs })
		require.NoError(t, err)
		cfg, _, err := server.TLSConfig(server.TLSOptions{GetCertificate: apiserver.ServingCertificate(sm)})
		require.NoError(t, err)
		_, err = tlstest.Handshake(cfg)
		assert.Error(t, err, "no serving certificate before the CSR")

		cm.Start()
		sm.Start()
		synctest.Wait()
		serving, err := tlstest.Handshake(cfg)
		require.NoError(t, err)
		assert.Equal(t, "system:node:node1", serving.Subject.CommonName)
		assert.Equal(t, []string{"node1"}, serving.DNSNames)
		require.Len(t, serving.IPAddresses, 1)
		assert.Equal(t, "192.0.2.10", serving.IPAddresses[0].String())
		assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, serving.ExtKeyUsage)
		var servingReq *certificatesv1.CertificateSigningRequest
		for _, r := range s.requests() {
			if r.Spec.SignerName == "kubernetes.io/kubelet-serving" {
				servingReq = r
			}
		}
		require.NotNil(t, servingReq)
		assert.Equal(t, []certificatesv1.KeyUsage{"digital signature", "server auth"}, servingReq.Spec.Usages, "an ECDSA key: no key encipherment, as upstream")
		assert.Equal(t, first.SerialNumber, leafOf(t, current).SerialNumber, "no client rotation yet")

		// A certificate for an hour is renewed 42 to 54 minutes in.
		time.Sleep(time.Hour)
		synctest.Wait()
		rotated := leafOf(t, current)
		assert.NotEqual(t, first.SerialNumber, rotated.SerialNumber, "the client certificate was renewed")
		assert.True(t, rotated.NotAfter.After(first.NotAfter))
		assert.Equal(t, rotated.SerialNumber, cm.Current().Leaf.SerialNumber)
		again, err := tlstest.Handshake(cfg)
		require.NoError(t, err)
		assert.NotEqual(t, serving.SerialNumber, again.SerialNumber, "the new serving certificate, without a restart")
		assert.True(t, again.NotAfter.After(serving.NotAfter))

		// client-go's Stop does not wake a manager waiting for its next
		// rotation: its goroutines end at that deadline, at most an hour on.
		cm.Stop()
		sm.Stop()
		time.Sleep(time.Hour)
	})
}

// A node restarted while its CSR waits for approval waits for the same
// CSR with the same key: the key is kept in the cert dir (0600) until the
// certificate is stored, the CSR is named after it.
func TestBootstrapResumesPendingCSR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCSRSigner(t, 24*time.Hour, "pending")
		var logs bytes.Buffer
		o := certOptions(t, s, &logs)
		keyFile := filepath.Join(o.CertDir, apiserver.PendingKeyFile)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- apiserver.Bootstrap(ctx, o) }()
		synctest.Wait()
		pending := s.objects(t)
		require.Len(t, pending, 1)
		assert.Empty(t, pending[0].Status.Conditions, "waiting for approval")
		key, err := os.ReadFile(keyFile)
		require.NoError(t, err)
		fi, err := os.Stat(keyFile)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		assert.NoFileExists(t, o.Kubeconfig)

		cancel() // the node stops
		require.ErrorIs(t, <-done, context.Canceled)
		assert.FileExists(t, keyFile)

		go func() { done <- apiserver.Bootstrap(t.Context(), o) }() // and starts again
		synctest.Wait()
		require.Len(t, s.objects(t), 1, "no second CSR")
		again, err := os.ReadFile(keyFile)
		require.NoError(t, err)
		assert.Equal(t, key, again, "the same key")

		s.approve(t, pending[0].Name)
		require.NoError(t, <-done)
		csrs := s.objects(t)
		require.Len(t, csrs, 1)
		assert.Equal(t, pending[0].Name, csrs[0].Name)
		assert.Len(t, s.requests(), 1, "one CSR created")
		parsed, err := keyutil.ParsePrivateKeyPEM(key)
		require.NoError(t, err)
		current := filepath.Join(o.CertDir, "kubelet-client-current.pem")
		leaf := leafOf(t, current)
		assert.True(t, parsed.(*ecdsa.PrivateKey).PublicKey.Equal(leaf.PublicKey), "the certificate is for the kept key")
		pair, err := os.ReadFile(current)
		require.NoError(t, err)
		assert.Contains(t, string(pair), string(key), "stored with the kept key")
		assert.NoFileExists(t, keyFile, "removed once the certificate is stored")
		assert.FileExists(t, o.Kubeconfig)
		assert.NotContains(t, logs.String(), "PRIVATE KEY")
	})
}

// A pending key left beside a stored pair (a crash between storing the
// certificate and removing the key) names a CSR that was issued long ago:
// once that certificate has expired, the CSR gives nothing, so the key is
// dropped and the next try sends a new CSR with a new key.
func TestBootstrapDropsTheKeyOfAnExpiredCSR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, o, logs := bootstrapped(t, time.Hour)
		current := filepath.Join(o.CertDir, "kubelet-client-current.pem")
		pair, err := os.ReadFile(current)
		require.NoError(t, err)
		var key []byte
		for rest := pair; len(rest) > 0; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				key = pem.EncodeToMemory(b)
			}
		}
		require.NotEmpty(t, key)
		keyFile := filepath.Join(o.CertDir, apiserver.PendingKeyFile)
		require.NoError(t, os.WriteFile(keyFile, key, 0o600))
		require.NoError(t, os.Remove(o.Kubeconfig))

		time.Sleep(2 * time.Hour) // the node was off
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the old CSR found again and again would fail it
		defer cancel()
		require.NoError(t, apiserver.Bootstrap(ctx, o))
		assert.Equal(t, 2*time.Second, time.Since(start), "one retry, with a new key")
		assert.Len(t, s.objects(t), 2)
		assert.Contains(t, logs.String(), "retrieved csr is not compatible")
		assert.Contains(t, logs.String(), "the CSR gives no certificate, the next try makes a new key and a new CSR")
		renewed, err := os.ReadFile(current)
		require.NoError(t, err)
		assert.NotContains(t, string(renewed), string(key), "a new key")
		assert.NoFileExists(t, keyFile)
	})
}

// Through client-go's real client: an API server answering 401 to the CSR
// is logged at Error as the bootstrap kubeconfig's credentials refused,
// naming the file and never the token; Bootstrap waits 2s, 4s (a fake
// clock) and asks again, until it is stopped; the old kubeconfig and the
// pending key are left.
func TestBootstrapTokenRefusedByAPIServer(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Authorization") == "Bearer abcdef.0123456789abcdef" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap-kubelet.conf")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(boot, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kubernetes, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: tls-bootstrap-token-user, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: bootstrap, context: {cluster: kubernetes, user: tls-bootstrap-token-user}}]
current-context: bootstrap
`, srv.URL, toBase64(caPEM))), 0o600))
	stale := []byte("apiVersion: v1\nkind: Config\n")
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	require.NoError(t, os.WriteFile(kubeconfig, stale, 0o600))
	fc := testclock.NewFakeClock(time.Now())
	// The logs are read once Bootstrap waits on the clock: its lock orders
	// them after the write.
	var logs bytes.Buffer
	o := apiserver.CertificateOptions{NodeName: "node1", BootstrapKubeconfig: boot, Kubeconfig: kubeconfig, CertDir: filepath.Join(dir, "pki"),
		Clock: fc, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- apiserver.Bootstrap(ctx, o) }()

	require.Eventually(t, fc.HasWaiters, 10*time.Second, time.Millisecond)
	log := logs.String()
	assert.Contains(t, log, "retryAfter=2s")
	assert.Contains(t, log, "level=ERROR")
	assert.Contains(t, log, "the API server refused the credentials of the bootstrap kubeconfig "+boot+" (401 Unauthorized): its bootstrap token may be wrong or expired")
	assert.NotContains(t, log, "0123456789abcdef", "never the token")
	assert.EqualValues(t, 1, posts.Load(), "the CSR was sent with the bootstrap token")
	key, err := os.ReadFile(filepath.Join(o.CertDir, apiserver.PendingKeyFile))
	require.NoError(t, err)

	fc.Step(2 * time.Second)
	require.Eventually(t, fc.HasWaiters, 10*time.Second, time.Millisecond)
	assert.Contains(t, logs.String(), "retryAfter=4s")
	assert.EqualValues(t, 2, posts.Load())

	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "Unauthorized")
	kc, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, stale, kc, "the kubeconfig there was is left")
	again, err := os.ReadFile(filepath.Join(o.CertDir, apiserver.PendingKeyFile))
	require.NoError(t, err)
	assert.Equal(t, key, again, "the pending key is kept, and was used again")
}
