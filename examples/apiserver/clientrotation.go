package apiserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/utils/clock"
)

// ClientRotationOptions tune NewClientRotation. The zero value is upstream
// kubelet's behaviour.
type ClientRotationOptions struct {
	// Period is how often Run reads the manager's current certificate;
	// zero means 10s, as upstream kubelet.
	Period time.Duration
	// Clock times Run's reads and says when a certificate has expired;
	// nil means the real clock.
	Clock clock.WithTicker
	// Logger receives a rotation (Info) and the loss of the certificate
	// (Error), never a key; nil discards them.
	Logger *slog.Logger
}

// ClientRotation keeps a client's connections to the API server on the
// client certificate a certificate.Manager hands out, as upstream
// kubelet's transport does with rotateCertificates: each TLS handshake
// presents the manager's current certificate, and the connections it
// dialled are closed when that changes, watches included, so that the
// client dials again and presents the new one. An API server checks a
// client certificate at the handshake only; without this, a watch opened
// with the old certificate would outlive it.
//
// When the manager has no valid certificate any more (the current one
// expired and none was issued in time), Run closes the connections too and
// logs at Error. Upstream kubelet exits the process then, so that its
// service manager restarts it and --bootstrap-kubeconfig asks for a new
// certificate. An edge agent must not lose its pods for want of an API
// server, so Run does not exit: new connections carry no client
// certificate, the API server refuses them, and the agent goes on running
// the pods it has (from its local state, when it keeps one) while the
// manager tries again; restarting it with a bootstrap kubeconfig
// (Bootstrap finds the certificate expired and asks for a new one) is the
// operator's call. A certificate that comes back is a rotation like any
// other.
//
// Made by NewClientRotation; Run drives it; CloseAll may be called from any
// goroutine.
type ClientRotation struct {
	manager certificate.Manager
	dialer  *connrotation.Dialer
	period  time.Duration
	clock   clock.WithTicker
	logger  *slog.Logger
	last    *tls.Certificate // the valid certificate Run saw last; Run's only
}

// NewClientRotation returns a copy of rc whose client certificate is m's
// current one at each TLS handshake (none while m has none), over
// connections the returned ClientRotation tracks; rc's server, CA, server
// name, proxy and dialer are kept, its client certificate and key (files
// or data) are replaced by m's. rc must not have a Transport of its own.
// It starts nothing: the caller runs Run for as long as the client is in
// use.
func NewClientRotation(rc *rest.Config, m certificate.Manager, o ClientRotationOptions) (*rest.Config, *ClientRotation, error) {
	if m == nil {
		return nil, nil, errors.New("client rotation: no certificate manager")
	}
	if rc.Transport != nil {
		return nil, nil, errors.New("client rotation: the REST configuration has a Transport of its own")
	}
	if o.Period == 0 {
		o.Period = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg := rest.CopyConfig(rc)
	cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = "", "", nil, nil
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("client rotation: TLS: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	r := &ClientRotation{manager: m, dialer: connrotation.NewDialer(dial), period: o.Period, clock: o.Clock, logger: o.Logger}
	if c := m.Current(); usableAt(c, o.Clock.Now()) {
		r.last = c
	}
	tlsConfig.GetClientCertificate = r.clientCertificate
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy: proxy, TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConfig,
		MaxIdleConnsPerHost: 25, DialContext: r.dialer.DialContext,
	})
	// The transport holds all of it now; client-go refuses TLS options
	// beside a Transport.
	cfg.TLSClientConfig, cfg.Dial, cfg.Proxy = rest.TLSClientConfig{}, nil, nil
	return cfg, r, nil
}

// clientCertificate is the TLS GetClientCertificate hook: the manager's
// current certificate, or none (the server sees an anonymous client).
func (r *ClientRotation) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := r.manager.Current(); c != nil {
		return c, nil
	}
	return &tls.Certificate{}, nil
}

// Run reads the manager's current certificate every Period and closes the
// connections when it has changed or is gone, as the type says, until ctx
// ends; then it returns nil. Connections stay open after Run: CloseAll
// closes them.
func (r *ClientRotation) Run(ctx context.Context) error {
	t := r.clock.NewTicker(r.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			r.check()
		}
	}
}

// CloseAll closes every connection the client has open; the next request
// dials again.
func (r *ClientRotation) CloseAll() { r.dialer.CloseAll() }

// check acts on one read of the manager.
func (r *ClientRotation) check() {
	curr := r.manager.Current()
	switch clientCertificateChange(r.last, curr, r.clock.Now()) {
	case certificateRotated:
		r.logger.Info("client certificate rotated: closing the API server connections, which reconnect with it", "notAfter", leaf(curr).NotAfter)
		r.last = curr
		r.dialer.CloseAll()
	case certificateLost:
		r.logger.Error("the client certificate has expired and no new one was issued: API server connections closed; "+
			"the API server will refuse this node until it has a certificate again (a restart with a bootstrap kubeconfig asks for one); "+
			"the node keeps running its pods", "expired", leaf(r.last).NotAfter)
		r.last = nil
		r.dialer.CloseAll()
	}
}

// certificateChange is what a read of the manager calls for.
type certificateChange int

const (
	certificateUnchanged certificateChange = iota // nothing to do
	certificateRotated                            // another valid certificate (or a first one): close the connections
	certificateLost                               // the valid one is gone or expired, none in its place: close the connections, say so
)

// clientCertificateChange compares the valid certificate last seen (nil:
// none) with the manager's current one at now.
func clientCertificateChange(last, curr *tls.Certificate, now time.Time) certificateChange {
	if !usableAt(curr, now) {
		if last != nil {
			return certificateLost
		}
		return certificateUnchanged
	}
	if last != nil && (last == curr || bytes.Equal(last.Certificate[0], curr.Certificate[0])) {
		return certificateUnchanged
	}
	return certificateRotated
}

// usableAt reports whether c holds a certificate valid at now.
func usableAt(c *tls.Certificate, now time.Time) bool {
	return c != nil && len(c.Certificate) > 0 && validAt(leaf(c), now)
}

// leaf is c's parsed certificate: its Leaf, else its first certificate
// parsed; nil when there is none.
func leaf(c *tls.Certificate) *x509.Certificate {
	switch {
	case c == nil || len(c.Certificate) == 0:
		return nil
	case c.Leaf != nil:
		return c.Leaf
	}
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return l
}
