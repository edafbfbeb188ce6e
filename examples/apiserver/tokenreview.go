package apiserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/server"
)

// ErrInvalidToken is wrapped by the error of a bearer token that the API
// server's TokenReview did not authenticate (upstream's "invalid bearer
// token"); the error carries the review's reason when it gave one.
var ErrInvalidToken = errors.New("invalid bearer token")

// refusedError is a review's refusal with the server's reason.
type refusedError struct{ reason string }

func (e *refusedError) Error() string        { return "token review: " + e.reason }
func (e *refusedError) Is(target error) bool { return target == ErrInvalidToken }

// Defaults of TokenReviewOptions.
const (
	// DefaultTokenCacheTTL is how long a review's answer is kept (upstream
	// kubelet's --authentication-token-webhook-cache-ttl).
	DefaultTokenCacheTTL = 2 * time.Minute
	// DefaultTokenCacheSize bounds how many tokens' answers are kept; the
	// least recently used goes first.
	DefaultTokenCacheSize = 8192
	// tokenLookupTimeout bounds one review that concurrent requests with
	// the same token share, whatever their own deadlines (upstream's).
	tokenLookupTimeout = 30 * time.Second
)

// groupAuthenticated is the group upstream adds to every authenticated
// user.
const groupAuthenticated = "system:authenticated"

// websocketTokenPrefix starts the WebSocket subprotocol that carries a
// bearer token, base64url-encoded without padding, for clients (browsers)
// that cannot set an Authorization header.
const websocketTokenPrefix = "base64url.bearer.authorization.k8s.io."

// TokenReviewOptions configure a TokenReviewAuthenticator. The zero value
// is upstream kubelet's defaults.
type TokenReviewOptions struct {
	// CacheTTL is how long an answer (authenticated or not) is kept: 0
	// means DefaultTokenCacheTTL (2m), a negative value no cache. Errors
	// are never kept.
	CacheTTL time.Duration
	// CacheSize bounds the cache; 0 means DefaultTokenCacheSize.
	CacheSize int
	// Audiences, when set, are sent in each review, and a token is
	// accepted only when the review's status names one of them. None (the
	// default, as upstream kubelet) means the API server's own audiences.
	Audiences []string
	// Backoff retries a review that failed for a transient reason; the
	// zero value means DefaultWebhookBackoff, Steps 1 no retry.
	Backoff wait.Backoff
	// Clock gives the cache its time and the retries their waits; nil
	// means the real clock.
	Clock clock.Clock
	// Logger receives the reviews that failed (never a token); nil
	// discards them.
	Logger *slog.Logger
}

// TokenReviewAuthenticator is a server.Authenticator that checks bearer
// tokens with the API server's TokenReview, as upstream kubelet's
// --authentication-token-webhook does. It is safe for concurrent use.
type TokenReviewAuthenticator struct {
	reviews authenticationv1client.TokenReviewInterface
	opts    TokenReviewOptions
	clk     clock.Clock
	log     *slog.Logger
	ttl     time.Duration
	cache   *utilcache.LRUExpireCache // by keyed token hash: tokenAnswer
	hashKey []byte

	mu       sync.Mutex
	inflight map[string]*tokenLookup
}

var _ server.Authenticator = (*TokenReviewAuthenticator)(nil)

// tokenAnswer is a review's outcome: a user, or the error that says why
// not; keep tells whether it may be cached (as upstream, an answer with
// the server's reason is not, nor a failed review).
type tokenAnswer struct {
	user *server.User
	err  error
	keep bool
}

// tokenLookup is one review that every request with the same token waits
// for.
type tokenLookup struct {
	done   chan struct{}
	answer tokenAnswer
}

// NewTokenReviewAuthenticator returns an authenticator that asks reviews
// (client.AuthenticationV1()) about bearer tokens. It starts no goroutine.
func NewTokenReviewAuthenticator(reviews authenticationv1client.TokenReviewsGetter, opts TokenReviewOptions) (*TokenReviewAuthenticator, error) {
	if reviews == nil {
		return nil, fmt.Errorf("new token review authenticator: client is nil: %w", ErrInvalidArgument)
	}
	if opts.CacheSize < 0 {
		return nil, fmt.Errorf("new token review authenticator: cache size %d is negative: %w", opts.CacheSize, ErrInvalidArgument)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultTokenCacheSize
	}
	opts.Backoff = orBackoff(opts.Backoff)
	a := &TokenReviewAuthenticator{reviews: reviews.TokenReviews(), opts: opts, clk: orClock(opts.Clock),
		log: opts.Logger, ttl: ttlOr(opts.CacheTTL, DefaultTokenCacheTTL), hashKey: make([]byte, 32),
		inflight: map[string]*tokenLookup{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.cache = utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, a.clk)
	// The cache is keyed by a hash of the token under a key of this
	// authenticator's, so that no token is kept, nor can be guessed from
	// what is kept.
	if _, err := rand.Read(a.hashKey); err != nil {
		return nil, fmt.Errorf("new token review authenticator: %w", err)
	}
	return a, nil
}

// AuthenticateRequest authenticates the bearer token of r's Authorization
// header ("Bearer <token>"), or the one a WebSocket request carries in its
// Sec-WebSocket-Protocol header. A request with neither is ok false and no
// error. A token that the review did not authenticate is an error that
// wraps ErrInvalidToken, or carries the server's reason; a review that
// could not be made is an error too. Once a token is authenticated it is
// removed from r, so that it goes no further.
func (a *TokenReviewAuthenticator) AuthenticateRequest(r *http.Request) (*server.User, bool, error) {
	var errs []error
	if token := bearerToken(r); token != "" {
		u, err := a.authenticate(r.Context(), token)
		if err == nil {
			r.Header.Del("Authorization")
			return u, true, nil
		}
		errs = append(errs, err)
	}
	token, others, err := websocketToken(r)
	switch {
	case err != nil:
		errs = append(errs, err)
	case token != "":
		u, err := a.authenticate(r.Context(), token)
		if err == nil {
			r.Header.Set("Sec-WebSocket-Protocol", strings.Join(others, ","))
			return u, true, nil
		}
		errs = append(errs, err)
	}
	return nil, false, errors.Join(errs...)
}

// AuthenticateToken reviews one token: the user, ok true; or ok false with
// the error that says why not (ErrInvalidToken when the review said no
// more).
func (a *TokenReviewAuthenticator) AuthenticateToken(ctx context.Context, token string) (*server.User, bool, error) {
	u, err := a.authenticate(ctx, token)
	if err != nil {
		return nil, false, err
	}
	return u, true, nil
}

func (a *TokenReviewAuthenticator) authenticate(ctx context.Context, token string) (*server.User, error) {
	key := a.key(token)
	a.mu.Lock()
	if v, ok := a.cache.Get(key); ok {
		a.mu.Unlock()
		return answerOf(v.(tokenAnswer))
	}
	l, ok := a.inflight[key]
	if !ok {
		l = &tokenLookup{done: make(chan struct{})}
		a.inflight[key] = l
		go a.lookup(key, token, l)
	}
	a.mu.Unlock()
	select {
	case <-l.done:
		return answerOf(l.answer)
	case <-ctx.Done():
		return nil, fmt.Errorf("token review: %w", ctx.Err())
	}
}

// answerOf returns a copy of what an answer says.
func answerOf(ans tokenAnswer) (*server.User, error) {
	if ans.user == nil {
		return nil, ans.err
	}
	return copyUser(ans.user), nil
}

// lookup reviews a token for every request waiting on l, bounded by its
// own timeout rather than the first request's deadline, and keeps the
// answer unless it is an error.
func (a *TokenReviewAuthenticator) lookup(key, token string, l *tokenLookup) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenLookupTimeout)
	defer cancel()
	l.answer = a.review(ctx, token)
	a.mu.Lock()
	if a.ttl > 0 && l.answer.keep {
		a.cache.Add(key, l.answer, a.ttl)
	}
	delete(a.inflight, key)
	a.mu.Unlock()
	close(l.done)
}

// review asks the API server about token.
func (a *TokenReviewAuthenticator) review(ctx context.Context, token string) tokenAnswer {
	req := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: a.opts.Audiences}}
	var got *authenticationv1.TokenReview
	err := withBackoff(ctx, a.clk, a.opts.Backoff, func(ctx context.Context) error {
		var err error
		got, err = a.reviews.Create(ctx, req, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		a.log.Error("Failed to make webhook authenticator request", "err", err)
		return tokenAnswer{err: fmt.Errorf("token review: %w", err)}
	}
	st := got.Status
	switch {
	case !st.Authenticated && st.Error != "":
		return tokenAnswer{err: &refusedError{reason: st.Error}}
	case !st.Authenticated:
		return tokenAnswer{err: ErrInvalidToken, keep: true}
	case len(a.opts.Audiences) > 0 && !slices.ContainsFunc(st.Audiences, func(s string) bool { return slices.Contains(a.opts.Audiences, s) }):
		return tokenAnswer{err: fmt.Errorf("%w: not for audiences %v", ErrInvalidToken, a.opts.Audiences), keep: true}
	}
	u := &server.User{Name: st.User.Username, UID: st.User.UID, Groups: slices.Clone(st.User.Groups)}
	if st.User.Extra != nil {
		u.Extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			u.Extra[k] = slices.Clone(v)
		}
	}
	// Upstream's authenticator chain puts every authenticated user in
	// system:authenticated.
	if !slices.Contains(u.Groups, groupAuthenticated) {
		u.Groups = append(u.Groups, groupAuthenticated)
	}
	return tokenAnswer{user: u, keep: true}
}

// key is the cache's key of token: its HMAC-SHA256 under the
// authenticator's key.
func (a *TokenReviewAuthenticator) key(token string) string {
	h := hmac.New(sha256.New, a.hashKey)
	h.Write([]byte(token))
	return string(h.Sum(nil))
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header (the scheme in any case); "" when there is none.
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	// A second space (before the token, or inside it) makes it no token,
	// as upstream reads the header.
	token, _, _ = strings.Cut(token, " ")
	return token
}

// websocketToken returns the bearer token a WebSocket request carries as a
// subprotocol and the other subprotocols it asks for; "" when it carries
// none. It fails for more than one token, a token that is not base64url
// UTF-8, or a token with no other subprotocol (there must remain one to
// answer with).
func websocketToken(r *http.Request) (token string, others []string, err error) {
	if !isWebSocket(r) {
		return "", nil, nil
	}
	seen := false
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			p = strings.TrimSpace(p)
			enc, ok := strings.CutPrefix(p, websocketTokenPrefix)
			if !ok {
				others = append(others, p)
				continue
			}
			if seen {
				return "", nil, errors.New("multiple base64.bearer.authorization tokens specified")
			}
			seen = true
			b, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				return "", nil, errors.New("invalid base64.bearer.authorization token encoding")
			}
			if !utf8.Valid(b) {
				return "", nil, errors.New("invalid base64.bearer.authorization token")
			}
			token = string(b)
		}
	}
	if token != "" && len(others) == 0 {
		return "", nil, errors.New("missing additional subprotocol")
	}
	return token, others, nil
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for p := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "upgrade") {
				return true
			}
		}
	}
	return false
}
