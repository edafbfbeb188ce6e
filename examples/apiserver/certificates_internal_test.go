package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A failed bootstrap request is logged at Error, in plain words, when the
// API server refused the bootstrap credentials; at Warn otherwise.
func TestRetryMessage(t *testing.T) {
	csrs := schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	for _, tc := range []struct {
		name  string
		err   error
		level slog.Level
		msg   string
	}{
		{name: "401", err: fmt.Errorf("request client certificate: %w", apierrors.NewUnauthorized("Unauthorized")), level: slog.LevelError,
			msg: "bootstrap: the API server refused the credentials of the bootstrap kubeconfig /etc/kubernetes/bootstrap-kubelet.conf (401 Unauthorized): its bootstrap token may be wrong or expired; retrying"},
		{name: "403", err: apierrors.NewForbidden(csrs, "", errors.New("no RBAC")), level: slog.LevelError,
			msg: "bootstrap: the API server refused the credentials of the bootstrap kubeconfig /etc/kubernetes/bootstrap-kubelet.conf (403 Forbidden): its bootstrap token may be wrong or expired, or its user may not create CertificateSigningRequests; retrying"},
		{name: "no answer", err: errors.New("dial tcp 192.0.2.1:6443: connect: connection refused"), level: slog.LevelWarn,
			msg: "bootstrap: no client certificate yet, retrying"},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd")), level: slog.LevelWarn,
			msg: "bootstrap: no client certificate yet, retrying"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			level, msg := retryMessage(tc.err, "/etc/kubernetes/bootstrap-kubelet.conf")
			assert.Equal(t, tc.level, level)
			assert.Equal(t, tc.msg, msg)
		})
	}
}

// A CSR that can no longer give a usable certificate is a dead end: its
// key is dropped.
func TestCSRDeadEnd(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	issued := func(notAfter time.Time) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	cond := func(t certificatesv1.RequestConditionType, s v1.ConditionStatus) []certificatesv1.CertificateSigningRequestCondition {
		return []certificatesv1.CertificateSigningRequestCondition{{Type: t, Status: s}}
	}
	for _, tc := range []struct {
		name string
		st   certificatesv1.CertificateSigningRequestStatus
		dead bool
	}{
		{name: "pending"},
		{name: "approved, not yet issued", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateApproved, v1.ConditionTrue)}},
		{name: "issued, valid", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateApproved, v1.ConditionTrue), Certificate: issued(now.Add(time.Hour))}},
		{name: "issued, expired", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateApproved, v1.ConditionTrue), Certificate: issued(now)}, dead: true},
		{name: "issued, unreadable", st: certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("not PEM")}, dead: true},
		{name: "denied", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateDenied, v1.ConditionTrue)}, dead: true},
		{name: "failed", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateFailed, v1.ConditionTrue)}, dead: true},
		{name: "a denial withdrawn", st: certificatesv1.CertificateSigningRequestStatus{Conditions: cond(certificatesv1.CertificateDenied, v1.ConditionFalse)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.dead, csrDeadEnd(&certificatesv1.CertificateSigningRequest{Status: tc.st}, now))
		})
	}
}

// The CSR's name is a function of its key, subject and usages: the same
// request the same name, any field changed another.
func TestCSRName(t *testing.T) {
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	k1, k2 := key(), key()
	node := pkix.Name{CommonName: "system:node:node1", Organization: []string{"system:nodes"}}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	base, err := csrName(k1.Public(), node, usages)
	require.NoError(t, err)
	assert.Regexp(t, `^node-csr-[A-Za-z0-9_-]{43}$`, base)
	for _, tc := range []struct {
		name    string
		key     *ecdsa.PrivateKey
		subject pkix.Name
		usages  []certificatesv1.KeyUsage
		same    bool
	}{
		{name: "the same request", key: k1, subject: node, usages: usages, same: true},
		{name: "another key", key: k2, subject: node, usages: usages},
		{name: "another node", key: k1, subject: pkix.Name{CommonName: "system:node:node2", Organization: []string{"system:nodes"}}, usages: usages},
		{name: "a field's end moved", key: k1, subject: pkix.Name{CommonName: "system:node:node1system:", Organization: []string{"nodes"}}, usages: usages},
		{name: "other usages", key: k1, subject: node, usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, err := csrName(tc.key.Public(), tc.subject, tc.usages)
			require.NoError(t, err)
			assert.Equal(t, tc.same, name == base)
		})
	}
}
