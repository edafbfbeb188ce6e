package tlstest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kubeletkit/kubeletkit/internal/tlstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func selfSigned(cn string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func Example() {
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned("node1")}}
	leaf, err := tlstest.Handshake(cfg)
	fmt.Println(leaf.Subject.CommonName, err)

	refusing := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("none yet")
	}}
	_, err = tlstest.Handshake(refusing)
	fmt.Println(err != nil)
	// Output:
	// node1 <nil>
	// true
}
