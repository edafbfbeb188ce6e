package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
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
// used; failing that, it makes an ECDSA P-256 key and sends a CSR for
// CN=system:node:<node>, O=system:nodes to ClientSignerName with the usages
// digital signature and client auth, with the bootstrap credentials, waits
// for it to be approved and issued, and stores the pair in CertDir. Then it
// writes Kubeconfig: the bootstrap kubeconfig's server and CA, and the
// stored pair. A failed request (a token that is wrong or expired, a CSR
// denied) is logged and tried again after a growing wait, until ctx ends;
// nothing is written until a certificate is issued, so a restart loses no
// state.
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
	if err := writeKubeconfig(o.Kubeconfig, boot, store.CurrentPath()); err != nil {
		return fmt.Errorf("bootstrap: write kubeconfig %s: %w", o.Kubeconfig, err)
	}
	return nil
}

// requestWithRetries asks for a client certificate until one is stored or
// ctx ends.
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
		o.Logger.Warn("bootstrap: no client certificate yet, retrying", "err", err.Error(), "retryAfter", wait)
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

// requestClientCertificate sends one CSR and stores what is issued.
func (o CertificateOptions) requestClientCertificate(ctx context.Context, boot *rest.Config, store certificate.FileStore) error {
	client, err := o.NewClient(boot)
	if err != nil {
		return fmt.Errorf("client from bootstrap kubeconfig %s: %w", o.BootstrapKubeconfig, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("encode key: %w", err)
	}
	subject := o.nodeSubject()
	csrPEM, err := certutil.MakeCSR(key, &subject, nil, nil)
	if err != nil {
		return fmt.Errorf("make CSR: %w", err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, "", ClientSignerName, nil, usages, key)
	if err != nil {
		return fmt.Errorf("request client certificate: %w", err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return fmt.Errorf("wait for client certificate of CSR %s: %w", name, err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("store client certificate: %w", err)
	}
	return nil
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
