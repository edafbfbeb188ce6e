package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// CAProvider gives the client CAs in force at the time of the call; the
// pool it returns is never modified afterwards, and a later call may return
// another. Nil means no CA: no client certificate verifies.
type CAProvider interface {
	ClientCAs() *x509.CertPool
}

// CAProviderFunc adapts a function to a CAProvider.
type CAProviderFunc func() *x509.CertPool

var _ CAProvider = CAProviderFunc(nil)

// ClientCAs calls f.
func (f CAProviderFunc) ClientCAs() *x509.CertPool { return f() }

// StaticCAs is a CAProvider of a fixed pool.
func StaticCAs(pool *x509.CertPool) CAProvider {
	return CAProviderFunc(func() *x509.CertPool { return pool })
}

// ClientCAFileOptions configure NewClientCAFile.
type ClientCAFileOptions struct {
	// File is the PEM bundle of client CAs (--client-ca-file). Required.
	File string
	// Interval is how often at most ClientCAs reads File again; zero
	// means DefaultReloadInterval, negative never reads it again.
	Interval time.Duration
	// Clock times Interval; nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives each bundle loaded after the first, and each failed
	// reload; nil discards them.
	Logger *slog.Logger
}

// ClientCAFile is a CAProvider over a PEM file that follows the file, as
// upstream kubelet does with ReloadKubeletClientCAFile (on by default): a
// new bundle is in force without a restart. It has no goroutine: a call of
// ClientCAs, at most once per interval, reads the file and, when its
// content changed, parses it. A file that is gone, unreadable or holds no
// certificate leaves the CAs loaded before in force, and is logged; it is
// read again at the next interval. Safe for concurrent use; a nil
// *ClientCAFile gives no CAs.
type ClientCAFile struct {
	file     string
	interval time.Duration
	clock    clock.PassiveClock
	log      *slog.Logger

	mu     sync.Mutex
	data   []byte // the content the pool was parsed from
	pool   *x509.CertPool
	looked time.Time
}

var _ CAProvider = (*ClientCAFile)(nil)

// NewClientCAFile reads o.File; a file that cannot be read or holds no
// certificate is an error, as upstream's start.
func NewClientCAFile(o ClientCAFileOptions) (*ClientCAFile, error) {
	if o.File == "" {
		return nil, errors.New("client CA: no file")
	}
	f := &ClientCAFile{file: o.File}
	f.interval, f.clock, f.log = reloadDefaults(o.Interval, o.Clock, o.Logger)
	data, pool, err := readCABundle(o.File)
	if err != nil {
		return nil, err
	}
	f.data, f.pool, f.looked = data, pool, f.clock.Now()
	return f, nil
}

// File is the bundle's path.
func (f *ClientCAFile) File() string { return f.file }

// ClientCAs gives the CAs of the bundle last loaded whole, first reading
// the file again when the interval has passed since the last look.
func (f *ClientCAFile) ClientCAs() *x509.CertPool {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.interval < 0 {
		return f.pool
	}
	now := f.clock.Now()
	if now.Sub(f.looked) < f.interval {
		return f.pool
	}
	f.looked = now
	data, err := os.ReadFile(f.file)
	if err == nil && bytes.Equal(data, f.data) {
		return f.pool
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = parseCABundle(f.file, data)
	} else {
		err = fmt.Errorf("client CA: %w", err)
	}
	if err != nil {
		f.log.Warn("Client CA file not reloaded; the CAs loaded before stay in force", "file", f.file, "err", err.Error())
		return f.pool
	}
	f.data, f.pool = data, pool
	f.log.Info("Loaded a new client CA bundle", "file", f.file)
	return f.pool
}

// readCABundle reads and parses a PEM bundle of CA certificates.
func readCABundle(file string) ([]byte, *x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("client CA: %w", err)
	}
	pool, err := parseCABundle(file, data)
	if err != nil {
		return nil, nil, err
	}
	return data, pool, nil
}

func parseCABundle(file string, data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("client CA: no certificate in %s", file)
	}
	return pool, nil
}

// clientCAConfigs gives each handshake a configuration whose ClientCAs
// (the CAs named in the certificate request, which a client uses to
// choose its certificate) are the provider's current ones. A
// configuration is cloned from base once per pool.
type clientCAConfigs struct {
	base *tls.Config
	cas  CAProvider

	mu   sync.Mutex
	pool *x509.CertPool
	cfg  *tls.Config
}

func (c *clientCAConfigs) getConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	pool := c.cas.ClientCAs()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg == nil || pool != c.pool {
		cfg := c.base.Clone()
		cfg.ClientCAs = pool
		c.pool, c.cfg = pool, cfg
	}
	return c.cfg, nil
}
