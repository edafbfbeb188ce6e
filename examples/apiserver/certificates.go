package apiserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/clock"
)

// CertificateOptions say where a node's certificates by CSR live and how it
// asks for them: Bootstrap's client certificate and the managers'
// rotations (NewClientCertificateManager, NewServingCertificateManager).
type CertificateOptions struct {
	// NodeName is the node: its certificates are for
	// system:node:<NodeName> in group system:nodes.
	NodeName string
	// Kubeconfig is --kubeconfig: used as it is while its client
	// certificate is valid; written by Bootstrap otherwise (0600), naming
	// CertDir/kubelet-client-current.pem as certificate and key.
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig: the credentials (a
	// bootstrap token) that may only ask for a client certificate.
	BootstrapKubeconfig string
	// CertDir is --cert-dir: kubelet-client-<time>.pem and
	// kubelet-server-<time>.pem (certificate and key, 0600) and the
	// symlinks kubelet-client-current.pem and kubelet-server-current.pem,
	// as client-go's file store keeps them.
	CertDir string
	// NewClient makes a client from a REST configuration; nil means
	// kubernetes.NewForConfig. Tests give a fake clientset.
	NewClient func(*rest.Config) (kubernetes.Interface, error)
	// RetryAfter is Bootstrap's first wait after a failed request, doubled
	// after each failure up to MaxRetryAfter; zero means 2s and 5m.
	RetryAfter, MaxRetryAfter time.Duration
	// Clock times Bootstrap's waits; nil means the real clock. (client-go's
	// managers read the real time.)
	Clock clock.WithTicker
	// Logger receives a failed request, with the error, never a key; nil
	// discards it.
	Logger *slog.Logger
}

// The signers of the node's CSRs (upstream kubelet's).
const (
	ClientSignerName  = certificatesv1.KubeAPIServerClientKubeletSignerName // kubernetes.io/kube-apiserver-client-kubelet
	ServingSignerName = certificatesv1.KubeletServingSignerName             // kubernetes.io/kubelet-serving
)

func (o CertificateOptions) withDefaults() CertificateOptions {
	if o.NewClient == nil {
		o.NewClient = func(c *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(c) }
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = 2 * time.Second
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = 5 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// nodeSubject is the subject of the node's certificates.
func (o CertificateOptions) nodeSubject() pkix.Name {
	return pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}}
}

// Bootstrap gives the node a client certificate, as upstream kubelet's
// start with --bootstrap-kubeconfig. Without BootstrapKubeconfig, or when
// Kubeconfig exists and its client certificate (if it names one) is valid
// now, it does nothing. Otherwise a valid certificate already in CertDir is
// used; failing that, it sends a CSR for CN=system:node:<node>,
// O=system:nodes to ClientSignerName with the usages digital signature and
// client auth, with the bootstrap credentials, waits for it to be approved
// and issued, and stores the pair in CertDir. Then it writes Kubeconfig:
// the bootstrap kubeconfig's server and CA, and the stored pair.
//
// The CSR's key, ECDSA P-256, is kept in CertDir/PendingKeyFile (0600)
// until the certificate is stored, and the CSR is named after a digest of
// that key, the subject and the usages: a Bootstrap stopped while its CSR
// waits for approval (a restart) finds the same key at the next start, and
// waits for the same CSR instead of sending another. A CSR that can no
// longer give a certificate (denied, failed, issued and expired) has its
// key removed, so that the next try sends a new one.
//
// A failed request is logged and tried again after a growing wait, until
// ctx ends; Bootstrap never gives up by itself. A bootstrap token the API
// server refuses (401, 403) is logged at Error, naming the bootstrap
// kubeconfig and saying its token may be wrong or expired; anything else
// (a server that does not answer, a CSR denied) at Warn. Nothing else the
// node kept is touched meanwhile: the kubeconfig and the store are written
// only once a certificate is issued.
func Bootstrap(ctx context.Context, o CertificateOptions) error {
	if o.BootstrapKubeconfig == "" {
		return nil
	}
	if o.NodeName == "" || o.Kubeconfig == "" || o.CertDir == "" {
		return errors.New("bootstrap: NodeName, Kubeconfig and CertDir are needed")
	}
	o = o.withDefaults()
	if ok, err := kubeconfigValid(o.Kubeconfig, o.Clock.Now()); ok {
		return nil
	} else if err != nil {
		o.Logger.Info("bootstrap: the kubeconfig is not usable, asking for a client certificate", "kubeconfig", o.Kubeconfig, "err", err.Error())
	}
	boot, err := clientcmd.BuildConfigFromFlags("", o.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap: bootstrap kubeconfig %s: %w", o.BootstrapKubeconfig, err)
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return fmt.Errorf("bootstrap: cert dir: %w", err)
	}
	store, err := certificate.NewFileStore("kubelet-client", o.CertDir, o.CertDir, "", "")
	if err != nil {
		return fmt.Errorf("bootstrap: certificate store: %w", err)
	}
	if c, err := store.Current(); err != nil || !validAt(c.Leaf, o.Clock.Now()) {
		if err := o.requestWithRetries(ctx, boot, store); err != nil {
			return err
		}
	}
	o.removePendingKey()
	if err := writeKubeconfig(o.Kubeconfig, boot, store.CurrentPath()); err != nil {
		return fmt.Errorf("bootstrap: write kubeconfig %s: %w", o.Kubeconfig, err)
	}
	return nil
}

// requestWithRetries asks for a client certificate until one is stored or
// ctx ends. A failure is logged as retryMessage says, and nothing the node
// keeps is removed: the kubeconfig and the store stay as they were, and so
// does the pending key (the next try, or the next start, waits for the same
// CSR) unless its CSR can give no certificate.
func (o CertificateOptions) requestWithRetries(ctx context.Context, boot *rest.Config, store certificate.FileStore) error {
	wait := o.RetryAfter
	for {
		err := o.requestClientCertificate(ctx, boot, store)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("bootstrap: %w (stopped: %w)", err, ctx.Err())
		}
		level, msg := retryMessage(err, o.BootstrapKubeconfig)
		o.Logger.Log(ctx, level, msg, "err", err.Error(), "retryAfter", wait)
		t := o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("bootstrap: %w (stopped: %w)", err, ctx.Err())
		case <-t.C():
		}
		wait = min(2*wait, o.MaxRetryAfter)
	}
}

// retryMessage is how a failed bootstrap request is logged: the API server
// refusing the bootstrap credentials (401, or 403) at Error, in words an
// operator can act on; anything else (a server that does not answer, a CSR
// denied) at Warn.
func retryMessage(err error, bootstrapKubeconfig string) (slog.Level, string) {
	switch {
	case apierrors.IsUnauthorized(err):
		return slog.LevelError, fmt.Sprintf("bootstrap: the API server refused the credentials of the bootstrap kubeconfig %s (401 Unauthorized): "+
			"its bootstrap token may be wrong or expired; retrying", bootstrapKubeconfig)
	case apierrors.IsForbidden(err):
		return slog.LevelError, fmt.Sprintf("bootstrap: the API server refused the credentials of the bootstrap kubeconfig %s (403 Forbidden): "+
			"its bootstrap token may be wrong or expired, or its user may not create CertificateSigningRequests; retrying", bootstrapKubeconfig)
	}
	return slog.LevelWarn, "bootstrap: no client certificate yet, retrying"
}

// PendingKeyFile is the file in CertDir that keeps the private key of a
// client certificate Bootstrap has asked for and not yet received
// (upstream kubelet's name): a restart finds the same key, so the same CSR.
const PendingKeyFile = "kubelet-client.key.tmp"

// requestClientCertificate sends the CSR of the pending key (or finds it
// sent already: its name is a digest of the key, subject and usages), waits
// for it and stores what is issued.
func (o CertificateOptions) requestClientCertificate(ctx context.Context, boot *rest.Config, store certificate.FileStore) error {
	client, err := o.NewClient(boot)
	if err != nil {
		return fmt.Errorf("client from bootstrap kubeconfig %s: %w", o.BootstrapKubeconfig, err)
	}
	keyFile := filepath.Join(o.CertDir, PendingKeyFile)
	keyPEM, key, err := loadOrGenerateKey(keyFile)
	if err != nil {
		return err
	}
	subject := o.nodeSubject()
	csrPEM, err := certutil.MakeCSR(key, &subject, nil, nil)
	if err != nil {
		return fmt.Errorf("make CSR: %w", err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name, err := csrName(key.Public(), subject, usages)
	if err != nil {
		return err
	}
	_, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name, ClientSignerName, nil, usages, key)
	if err != nil {
		o.forgetKeyOfDeadCSR(ctx, client, name, keyFile, err)
		return fmt.Errorf("request client certificate: %w", err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		o.forgetKeyOfDeadCSR(ctx, client, name, keyFile, err)
		return fmt.Errorf("wait for client certificate of CSR %s: %w", name, err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("store client certificate: %w", err)
	}
	return nil
}

// forgetKeyOfDeadCSR removes the pending key when its CSR can no longer
// give a certificate (csrDeadEnd), so that the next try makes a new key and
// a new CSR instead of finding this one again.
func (o CertificateOptions) forgetKeyOfDeadCSR(ctx context.Context, client kubernetes.Interface, name, keyFile string, failed error) {
	if ctx.Err() != nil || apierrors.IsUnauthorized(failed) || apierrors.IsForbidden(failed) {
		return // the bootstrap credentials cannot read it either
	}
	req, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil || !csrDeadEnd(req, o.Clock.Now()) {
		return
	}
	if err := os.Remove(keyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.Logger.Warn("bootstrap: remove the key of a CSR that gives no certificate", "file", keyFile, "err", err.Error())
		return
	}
	o.Logger.Info("bootstrap: the CSR gives no certificate, the next try makes a new key and a new CSR", "csr", name)
}

// csrDeadEnd reports whether a CSR can no longer give a usable certificate:
// denied, failed, or issued with a certificate that has expired.
func csrDeadEnd(req *certificatesv1.CertificateSigningRequest, now time.Time) bool {
	for _, c := range req.Status.Conditions {
		if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status != v1.ConditionFalse {
			return true
		}
	}
	if len(req.Status.Certificate) == 0 {
		return false
	}
	certs, err := certutil.ParseCertsPEM(req.Status.Certificate)
	return err != nil || !now.Before(certs[0].NotAfter)
}

// removePendingKey removes PendingKeyFile once the store holds a valid
// pair: a key left there (a crash between storing and removing) would
// otherwise name an old CSR at the next bootstrap.
func (o CertificateOptions) removePendingKey() {
	f := filepath.Join(o.CertDir, PendingKeyFile)
	if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.Logger.Warn("bootstrap: remove the pending key", "file", f, "err", err.Error())
	}
}

// loadOrGenerateKey reads the private key at path, or, when there is none
// or it does not parse, makes an ECDSA P-256 key and writes it there, 0600.
func loadOrGenerateKey(path string) ([]byte, crypto.Signer, error) {
	if data, err := os.ReadFile(path); err == nil {
		if k, err := keyutil.ParsePrivateKeyPEM(data); err == nil {
			if s, ok := k.(crypto.Signer); ok {
				return data, s, nil
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("replace key %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, nil, fmt.Errorf("write key %s: %w", path, err)
	}
	return data, key, nil
}

// csrName is the name of the CSR for a key, subject and usages: "node-csr-"
// and a SHA-512/256 digest of them, so that the same request always has the
// same name (as upstream's, though not the same digest). Each field is
// written after its length, so that no two inputs give the same stream.
func csrName(pub crypto.PublicKey, subject pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("CSR name: %w", err)
	}
	fields := [][]byte{der, []byte(subject.CommonName)}
	for _, org := range subject.Organization {
		fields = append(fields, []byte(org))
	}
	for _, u := range usages {
		fields = append(fields, []byte(u))
	}
	h := sha512.New512_256()
	for _, f := range fields {
		h.Write(binary.AppendUvarint(nil, uint64(len(f))))
		h.Write(f)
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// kubeconfigValid reports whether the kubeconfig at path can be used as it
// is: it loads, and its client certificate, if it has one, is valid at now.
// A missing file is not valid and no error.
func kubeconfigValid(path string, now time.Time) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return false, err
	}
	data := rc.CertData
	if len(data) == 0 && rc.CertFile != "" {
		if data, err = os.ReadFile(rc.CertFile); err != nil {
			return false, err
		}
	}
	if len(data) == 0 {
		return true, nil
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return false, fmt.Errorf("client certificate: %w", err)
	}
	if !validAt(certs[0], now) {
		return false, fmt.Errorf("client certificate valid from %s to %s, not at %s", certs[0].NotBefore, certs[0].NotAfter, now.UTC())
	}
	return true, nil
}

func validAt(c *x509.Certificate, now time.Time) bool {
	return c != nil && !now.Before(c.NotBefore) && now.Before(c.NotAfter)
}

// writeKubeconfig writes a kubeconfig for boot's server and CA with the
// certificate and key in pair, 0600.
func writeKubeconfig(path string, boot *rest.Config, pair string) error {
	ca := boot.CAData
	if len(ca) == 0 && boot.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(boot.CAFile); err != nil {
			return err
		}
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: boot.Host, CertificateAuthorityData: ca, InsecureSkipTLSVerify: boot.Insecure, TLSServerName: boot.ServerName}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pair, ClientKey: pair}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(cfg, path)
}

// NewClientCertificateManager makes client-go's certificate manager for
// the client certificate Bootstrap stored: it asks with the kubeconfig's
// own credentials for a new one (the same subject and signer) when the
// current one is 70 to 90% through its life, and stores it where the
// kubeconfig points. The caller calls Start, and Stop when done.
func NewClientCertificateManager(o CertificateOptions) (certificate.Manager, error) {
	o = o.withDefaults()
	store, err := certificate.NewFileStore("kubelet-client", o.CertDir, o.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("client certificate store: %w", err)
	}
	subject := o.nodeSubject()
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) {
			rc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
			}
			return o.NewClient(rc)
		},
		Template:         &x509.CertificateRequest{Subject: subject},
		SignerName:       ClientSignerName,
		GetUsages:        certificate.DefaultKubeletClientGetUsages,
		CertificateStore: store,
		Name:             "kubelet-client",
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	return m, nil
}

// NewServingCertificateManager makes client-go's certificate manager for
// the kubelet API's serving certificate (upstream's serverTLSBootstrap):
// a CSR to ServingSignerName for CN=system:node:<node>, O=system:nodes
// with the node's addresses as SANs (hostnames and DNS names as DNS
// names, IPs as IP addresses; none yet: no request), sent with client,
// and again when the addresses change or the certificate is 70 to 90%
// through its life. ServingCertificate gives its certificate to the
// server. The caller calls Start, and Stop when done.
func NewServingCertificateManager(o CertificateOptions, client kubernetes.Interface, addresses func() []v1.NodeAddress) (certificate.Manager, error) {
	o = o.withDefaults()
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	store, err := certificate.NewFileStore("kubelet-server", o.CertDir, o.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store: %w", err)
	}
	subject := o.nodeSubject()
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		GetTemplate:      func() *x509.CertificateRequest { return servingTemplate(subject, addresses()) },
		SignerName:       ServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             "kubelet-serving",
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	return m, nil
}

// servingTemplate is the serving CSR's template for the addresses, or nil
// when there is none.
func servingTemplate(subject pkix.Name, addresses []v1.NodeAddress) *x509.CertificateRequest {
	t := &x509.CertificateRequest{Subject: subject}
	seen := map[string]bool{}
	for _, a := range addresses {
		if a.Address == "" || seen[a.Address] {
			continue
		}
		seen[a.Address] = true
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			t.DNSNames = append(t.DNSNames, a.Address)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				t.IPAddresses = append(t.IPAddresses, ip)
			}
		}
	}
	if len(t.DNSNames) == 0 && len(t.IPAddresses) == 0 {
		return nil
	}
	return t
}

// ServingCertificate is a server.TLSOptions.GetCertificate over m: its
// current certificate, or an error while it has none (not yet issued, or
// expired).
func ServingCertificate(m certificate.Manager) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if c := m.Current(); c != nil {
			return c, nil
		}
		return nil, errors.New("no serving certificate issued yet")
	}
}
