package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// What a read of the client certificate manager calls for: a new valid
// certificate closes the connections, the loss of the valid one too (and is
// said at Error), anything else nothing.
func TestClientCertificateChange(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cert := func(der string, notAfter time.Time) *tls.Certificate {
		return &tls.Certificate{Certificate: [][]byte{[]byte(der)}, Leaf: &x509.Certificate{NotBefore: notAfter.Add(-24 * time.Hour), NotAfter: notAfter}}
	}
	a := cert("a", now.Add(time.Hour))
	aAgain := cert("a", now.Add(time.Hour)) // the same certificate, loaded again
	b := cert("b", now.Add(2*time.Hour))
	expired := cert("a", now)
	notYet := cert("c", now.Add(48*time.Hour))
	for _, tc := range []struct {
		name       string
		last, curr *tls.Certificate
		want       certificateChange
	}{
		{name: "the same", last: a, curr: a, want: certificateUnchanged},
		{name: "the same, loaded again", last: a, curr: aAgain, want: certificateUnchanged},
		{name: "rotated", last: a, curr: b, want: certificateRotated},
		{name: "a first one", last: nil, curr: a, want: certificateRotated},
		{name: "gone", last: a, curr: nil, want: certificateLost},
		{name: "expired, none in its place", last: a, curr: expired, want: certificateLost},
		{name: "an empty one", last: a, curr: &tls.Certificate{}, want: certificateLost},
		{name: "not valid yet", last: a, curr: notYet, want: certificateLost},
		{name: "still none", last: nil, curr: nil, want: certificateUnchanged},
		{name: "still expired", last: nil, curr: expired, want: certificateUnchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, clientCertificateChange(tc.last, tc.curr, now))
		})
	}
}
