package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// X509Authenticator authenticates a request by its TLS client certificate,
// as upstream's x509 authenticator: the certificate is verified against
// Roots for client authentication (the chain's other certificates serve as
// intermediates); the user is its subject's common name, the groups its
// organizations. A request without a client certificate, or whose
// certificate has no common name, is not its to judge (ok false); a
// certificate that does not verify is an error.
type X509Authenticator struct {
	// Roots gives the client CAs (upstream's --client-ca-file), asked at
	// each request: a ClientCAFile follows its file. Nil, or a nil pool,
	// authenticates nobody.
	Roots CAProvider
}

var _ Authenticator = X509Authenticator{}

// credentialIDKey is the extra key under which Kubernetes records the
// credential a user authenticated with.
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// AuthenticateRequest verifies the request's client certificate.
func (a X509Authenticator) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || a.Roots == nil {
		return nil, false, nil
	}
	roots := a.Roots.ClientCAs()
	if roots == nil {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateID(certs[0]), err)
	}
	leaf := certs[0]
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	fp := sha256.Sum256(leaf.Raw)
	return &User{
		Name:   leaf.Subject.CommonName,
		Groups: append([]string(nil), leaf.Subject.Organization...),
		Extra:  map[string][]string{credentialIDKey: {"X509SHA256=" + hex.EncodeToString(fp[:])}},
	}, true, nil
}

// certificateID names a certificate in errors as upstream does: serial,
// subject key ID and authority key ID.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}

// TokenAuthenticator checks a bearer token: ok false and no error when the
// token is not one it knows. examples/apiserver implements it with a
// TokenReview. The server logs its errors: they must never quote the
// token.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// TokenAuthenticatorFunc adapts a function to TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string) (*User, bool, error)

var _ TokenAuthenticator = TokenAuthenticatorFunc(nil)

// AuthenticateToken calls f.
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	return f(ctx, token)
}

// errInvalidToken is upstream's answer to a bearer token no authenticator
// knows.
var errInvalidToken = errors.New("invalid bearer token")

// BearerToken authenticates a request by the token of its
// "Authorization: Bearer <token>" header, as upstream's bearer token
// authenticator: a request without one (or with an empty one) is not its
// to judge; a token t does not know is an error ("invalid bearer token").
// Once a token is accepted the header is removed from the request, so that
// it is never passed on to the runtime's streaming server.
func BearerToken(t TokenAuthenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		h := strings.TrimSpace(r.Header.Get("Authorization"))
		if h == "" {
			return nil, false, nil
		}
		parts := strings.SplitN(h, " ", 3)
		if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
			return nil, false, nil
		}
		u, ok, err := t.AuthenticateToken(r.Context(), parts[1])
		if ok {
			r.Header.Del("Authorization")
		}
		if !ok && err == nil {
			err = errInvalidToken
		}
		return u, ok, err
	})
}

// Anonymous authenticates every request as user system:anonymous in group
// system:unauthenticated (upstream's --anonymous-auth).
type Anonymous struct{}

var _ Authenticator = Anonymous{}

// AuthenticateRequest returns the anonymous user.
func (Anonymous) AuthenticateRequest(*http.Request) (*User, bool, error) {
	return &User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}, true, nil
}

// Union tries each authenticator in turn and returns the first user found.
// When none finds one it returns the errors they gave, joined, or ok false
// when they gave none.
func Union(as ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		var errs []error
		for _, a := range as {
			u, ok, err := a.AuthenticateRequest(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return u, true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// AuthenticatorOptions say which credentials NewAuthenticator accepts.
type AuthenticatorOptions struct {
	// ClientCA gives the CAs that verify client certificates
	// (X509Authenticator): TLSConfig's ClientCAFile, or StaticCAs; nil
	// accepts none.
	ClientCA CAProvider
	// Token checks bearer tokens (BearerToken); nil accepts none.
	Token TokenAuthenticator
	// Request is a further authenticator of whole requests, asked after
	// client certificates and Token: one that reads more than the
	// Authorization header (examples/apiserver's TokenReview
	// authenticator also reads a WebSocket's bearer subprotocol). Nil
	// means none.
	Request Authenticator
	// Anonymous lets a request without credentials in as
	// system:anonymous (upstream's --anonymous-auth, which kubeadm turns
	// off). A request with invalid credentials is still refused.
	Anonymous bool
}

// NewAuthenticator builds upstream kubelet's authenticator: client
// certificates, then bearer tokens, the user found getting the group
// system:authenticated; then, when enabled, anonymous for a request that
// carried no credentials (one whose credentials failed is refused, not
// let in as anonymous). With no method at all it fails as upstream does.
func NewAuthenticator(o AuthenticatorOptions) (Authenticator, error) {
	var as []Authenticator
	if o.ClientCA != nil {
		as = append(as, X509Authenticator{Roots: o.ClientCA})
	}
	if o.Token != nil {
		as = append(as, BearerToken(o.Token))
	}
	if o.Request != nil {
		as = append(as, o.Request)
	}
	if len(as) == 0 {
		if o.Anonymous {
			return Anonymous{}, nil
		}
		return nil, errors.New("no authentication method configured")
	}
	known := withAuthenticatedGroup(Union(as...))
	if !o.Anonymous {
		return known, nil
	}
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		u, ok, err := known.AuthenticateRequest(r)
		if err != nil || ok {
			return u, ok, err
		}
		return Anonymous{}.AuthenticateRequest(r)
	}), nil
}

// withAuthenticatedGroup adds system:authenticated to the groups of the
// users a finds, unless the user is anonymous or already in it (or in
// system:unauthenticated).
func withAuthenticatedGroup(a Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		u, ok, err := a.AuthenticateRequest(r)
		if err != nil || !ok {
			return nil, ok, err
		}
		if u.Name == UserAnonymous {
			return u, true, nil
		}
		for _, g := range u.Groups {
			if g == GroupAuthenticated || g == GroupUnauthenticated {
				return u, true, nil
			}
		}
		c := *u
		c.Groups = append(append(make([]string, 0, len(u.Groups)+1), u.Groups...), GroupAuthenticated)
		return &c, true, nil
	})
}
