package tlstest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
)

// Handshake makes one handshake with a server of cfg over net.Pipe, the
// client trusting anything, and returns the server's leaf certificate, or
// the client's handshake error. It returns once both ends are done.
func Handshake(cfg *tls.Config) (*x509.Certificate, error) {
	sc, cc := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Server(sc, cfg).Handshake()
		// The raw end: a TLS close would wait for the peer to read its alert.
		sc.Close()
	}()
	c := tls.Client(cc, &tls.Config{InsecureSkipVerify: true})
	err := c.Handshake()
	cc.Close()
	<-done
	if err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}
