package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
)

// TLSOptions say where the secure server's certificate comes from and
// whom it asks for client certificates, as upstream kubelet's flags.
type TLSOptions struct {
	// CertFile and KeyFile are the serving certificate (with its chain)
	// and key, PEM (--tls-cert-file, --tls-private-key-file). Give both
	// or neither.
	CertFile, KeyFile string
	// CertDir, when neither file is given, holds kubelet.crt and
	// kubelet.key (--cert-dir): used when both exist, else created: a
	// self-signed certificate for Host, IPs and DNSNames, valid a year,
	// the key mode 0600, the directory 0700 when created.
	CertDir string
	// Host is the name in the self-signed certificate: the node's name.
	Host string
	// IPs and DNSNames are further names of the self-signed certificate.
	IPs      []net.IP
	DNSNames []string
	// ClientCAFile holds the CAs of client certificates (--client-ca-file).
	// When set the server asks clients for a certificate (without
	// requiring one); X509Authenticator, over the ClientCAFile TLSConfig
	// returns, verifies it. The file is followed as upstream's
	// ReloadKubeletClientCAFile: read again at a handshake or a request at
	// most every ReloadInterval, a changed bundle is in force without a
	// restart (the CAs the handshake names and those the authenticator
	// verifies against), and a bad or missing file keeps the CAs loaded
	// before, logged.
	ClientCAFile string
	// MinVersion is the lowest TLS version served; zero means TLS 1.2.
	MinVersion uint16
	// CipherSuites, when set, are the TLS 1.2 cipher suites served.
	CipherSuites []uint16

	// GetCertificate, when set, gives the serving certificate at each
	// handshake in place of CertFile, KeyFile and CertDir (which must then
	// be empty): a certificate that rotates, such as one issued by a
	// kubernetes.io/kubelet-serving CSR, is served without a restart. An
	// error or a nil certificate fails that handshake only.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ReloadInterval is how often at most a handshake looks at CertFile and
	// KeyFile for a change (a new file, modification time or size) and, on
	// one, loads the pair again; as upstream's watch of --tls-cert-file and
	// --tls-private-key-file, a rotated pair is served without a restart.
	// It times the reading of ClientCAFile too. Zero means 5s; negative
	// never looks again. The self-signed pair under CertDir is not watched.
	ReloadInterval time.Duration
	// Clock times ReloadInterval; nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives a failed reload (the files are named, never their
	// content) and a new client CA bundle; nil discards them. The pair and
	// the CAs last loaded are in force meanwhile.
	Logger *slog.Logger
}

// DefaultReloadInterval is TLSOptions.ReloadInterval's default.
const DefaultReloadInterval = 5 * time.Second

// TLSConfig builds the secure server's TLS configuration, as upstream's
// InitializeTLS and its serving setup: the certificate from the files or
// the certificate directory (created self-signed the first time), and a
// request for client certificates when a client CA is given. It returns
// the client CA file too (nil without one), the CAProvider for
// X509Authenticator. With a client CA file each handshake is given a
// configuration of its own (GetConfigForClient), as upstream's: one that
// offers no ALPN protocol, so HTTP/1.1 is spoken.
func TLSConfig(o TLSOptions) (*tls.Config, *ClientCAFile, error) {
	certFile, keyFile := o.CertFile, o.KeyFile
	if (certFile == "") != (keyFile == "") {
		return nil, nil, errors.New("tls: certificate and key must be supplied as a pair")
	}
	cfg := &tls.Config{
		MinVersion:   o.MinVersion,
		CipherSuites: o.CipherSuites,
	}
	switch {
	case o.GetCertificate != nil:
		if certFile != "" || o.CertDir != "" {
			return nil, nil, errors.New("tls: a certificate getter excludes CertFile, KeyFile and CertDir")
		}
		cfg.GetCertificate = o.GetCertificate
	case certFile != "":
		r, err := newFilePair(certFile, keyFile, o)
		if err != nil {
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		cfg.GetCertificate = r.getCertificate
	default:
		if o.CertDir == "" {
			return nil, nil, errors.New("tls: no certificate: give CertFile and KeyFile, or CertDir")
		}
		certFile = filepath.Join(o.CertDir, "kubelet.crt")
		keyFile = filepath.Join(o.CertDir, "kubelet.key")
		if err := ensureSelfSigned(certFile, keyFile, o); err != nil {
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if o.ClientCAFile == "" {
		return cfg, nil, nil
	}
	cas, err := NewClientCAFile(ClientCAFileOptions{File: o.ClientCAFile, Interval: o.ReloadInterval, Clock: o.Clock, Logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	// Verification is the authenticator's: a request with no or a bad
	// certificate may still bring a token.
	cfg.ClientAuth = tls.RequestClientCert
	cfg.ClientCAs = cas.ClientCAs()
	if o.ReloadInterval >= 0 {
		cfg.GetConfigForClient = (&clientCAConfigs{base: cfg.Clone(), cas: cas}).getConfigForClient
	}
	return cfg, cas, nil
}

// LoadClientCAs reads a PEM file of CA certificates into a pool, once; a
// file with none is an error. NewClientCAFile follows the file.
func LoadClientCAs(file string) (*x509.CertPool, error) {
	_, pool, err := readCABundle(file)
	return pool, err
}

// ensureSelfSigned leaves a readable certificate and key pair in place,
// refuses half a pair, and otherwise writes a new self-signed pair.
func ensureSelfSigned(certFile, keyFile string, o TLSOptions) error {
	_, cerr := os.Stat(certFile)
	_, kerr := os.Stat(keyFile)
	switch {
	case cerr == nil && kerr == nil:
		return nil
	case cerr == nil || kerr == nil:
		missing := certFile
		if cerr == nil {
			missing = keyFile
		}
		return fmt.Errorf("error reading %s, certificate and key must be supplied as a pair", missing)
	case !errors.Is(cerr, fs.ErrNotExist):
		return cerr
	case !errors.Is(kerr, fs.ErrNotExist):
		return kerr
	}
	certPEM, keyPEM, err := selfSigned(o.Host, o.IPs, o.DNSNames, time.Now())
	if err != nil {
		return fmt.Errorf("unable to generate self signed cert: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		return err
	}
	// The key first: a crash between the two leaves no certificate, and
	// the next start refuses the lone key rather than serving a wrong pair.
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certFile, certPEM, 0o644)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(mode); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// selfSigned makes upstream's self-signed pair: a CA named
// "<host>-ca@<unix time>" and a serving certificate "<host>@<unix time>"
// it signs, both valid from an hour ago for a year; the PEM certificate
// holds the serving certificate then the CA. The keys are ECDSA P-256
// (upstream's RSA 2048).
func selfSigned(host string, ips []net.IP, dnsNames []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	if host == "" {
		return nil, nil, errors.New("no host name")
	}
	from := now.Add(-time.Hour)
	caDER, ca, caKey, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s-ca@%d", host, now.Unix())},
		NotBefore:             from,
		NotAfter:              from.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             from,
		NotAfter:              from.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	tmpl.IPAddresses = append(tmpl.IPAddresses, ips...)
	tmpl.DNSNames = append(tmpl.DNSNames, dnsNames...)
	der, _, key, err := newCert(tmpl, ca, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// newCert makes a key and a certificate from tmpl, with a random serial,
// signed by parent's key, or by its own when parent is nil.
func newCert(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl.SerialNumber = serial()
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return der, cert, key, nil
}

// serial is a random serial number in [1, MaxInt64).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64-1))
	if err != nil {
		// crypto/rand does not fail (Go 1.24+); a fixed serial would only
		// make two certificates look alike.
		n = big.NewInt(0)
	}
	return n.Add(n, big.NewInt(1))
}
