package apiserver_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/server"
)

// noRetry makes a failed review final at once.
var noRetry = wait.Backoff{Steps: 1}

// specLog records the specs of the reviews a fake API server answered.
type specLog[T any] struct {
	mu      sync.Mutex
	reviews []T
}

func (l *specLog[T]) add(spec T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reviews = append(l.reviews, spec)
}

func (l *specLog[T]) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reviews)
}

// reviewClient is a fake clientset whose reviews of resource react answers.
func reviewClient(resource string, react k8stesting.ReactionFunc) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", resource, react)
	return client
}

// orNoRetry is b, or noRetry for the zero value.
func orNoRetry(b wait.Backoff) wait.Backoff {
	if b == (wait.Backoff{}) {
		return noRetry
	}
	return b
}

// tokenServer answers TokenReviews from a table of tokens, as an API server
// with a static token file would, and records the reviews.
type tokenServer struct {
	specLog[authenticationv1.TokenReviewSpec]
	// answer, when set, replaces the table.
	answer func(spec authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error)
}

var tokenUsers = map[string]authenticationv1.UserInfo{
	"admin-token": {Username: "admin", UID: "uid-admin", Groups: []string{"system:masters", "system:authenticated"}},
	"node-token": {Username: "system:node:n1", UID: "uid-n1", Groups: []string{"system:nodes"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}},
}

func (s *tokenServer) react(action k8stesting.Action) (bool, runtime.Object, error) {
	spec := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).Spec
	s.add(spec)
	var st *authenticationv1.TokenReviewStatus
	if s.answer != nil {
		var err error
		if st, err = s.answer(spec); err != nil {
			return true, nil, err
		}
	} else if u, ok := tokenUsers[spec.Token]; ok {
		st = &authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
	} else {
		st = &authenticationv1.TokenReviewStatus{}
	}
	return true, &authenticationv1.TokenReview{Spec: spec, Status: *st}, nil
}

func newTokenAuth(t *testing.T, s *tokenServer, opts apiserver.TokenReviewOptions) *apiserver.TokenReviewAuthenticator {
	t.Helper()
	opts.Backoff = orNoRetry(opts.Backoff)
	a, err := apiserver.NewTokenReviewAuthenticator(reviewClient("tokenreviews", s.react).AuthenticationV1(), opts)
	require.NoError(t, err)
	return a
}

func request(headers ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "https://node:10250/pods", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func wsToken(token string) string {
	return "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(token))
}

// A request's bearer token is reviewed as upstream kubelet's
// authenticator reads it: the Authorization header, or a WebSocket
// subprotocol; none is no user and no error; a refused token an error.
func TestTokenReviewAuthenticateRequest(t *testing.T) {
	ws := []string{"Connection", "Upgrade", "Upgrade", "websocket"}
	admin := &server.User{Name: "admin", UID: "uid-admin", Groups: []string{"system:masters", "system:authenticated"}}
	for _, tc := range []struct {
		name        string
		headers     []string
		serverErr   error
		status      *authenticationv1.TokenReviewStatus
		want        *server.User
		wantErr     string
		wantErrIs   error
		wantReviews []string // tokens reviewed
		wantHeaders map[string]string
	}{
		{name: "no credentials"},
		{name: "another scheme", headers: []string{"Authorization", "Basic YWRtaW46YWRtaW4="}},
		{name: "empty bearer token", headers: []string{"Authorization", "Bearer "}},
		{name: "space before the token", headers: []string{"Authorization", "Bearer  admin-token"}},
		{name: "admin", headers: []string{"Authorization", "Bearer admin-token"}, want: admin,
			wantReviews: []string{"admin-token"}, wantHeaders: map[string]string{"Authorization": ""}},
		{name: "scheme in lower case, text after the token", headers: []string{"Authorization", "bearer admin-token ignored"}, want: admin,
			wantReviews: []string{"admin-token"}},
		{name: "node: system:authenticated added, extra kept", headers: []string{"Authorization", "Bearer node-token"},
			want: &server.User{Name: "system:node:n1", UID: "uid-n1", Groups: []string{"system:nodes", "system:authenticated"},
				Extra: map[string][]string{"scopes": {"a", "b"}}},
			wantReviews: []string{"node-token"}},
		{name: "unknown token", headers: []string{"Authorization", "Bearer nobody"}, wantErrIs: apiserver.ErrInvalidToken,
			wantReviews: []string{"nobody"}, wantHeaders: map[string]string{"Authorization": "Bearer nobody"}},
		{name: "the server's reason", headers: []string{"Authorization", "Bearer old"},
			status:  &authenticationv1.TokenReviewStatus{Error: "token has expired"},
			wantErr: "token review: token has expired", wantErrIs: apiserver.ErrInvalidToken, wantReviews: []string{"old"}},
		{name: "review refused", headers: []string{"Authorization", "Bearer admin-token"},
			serverErr: apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("no")),
			wantErr:   "tokenreviews.authentication.k8s.io is forbidden", wantReviews: []string{"admin-token"}},
		{name: "websocket subprotocol", headers: append([]string{"Sec-WebSocket-Protocol", wsToken("admin-token") + ", v5.channel.k8s.io"}, ws...),
			want: admin, wantReviews: []string{"admin-token"}, wantHeaders: map[string]string{"Sec-WebSocket-Protocol": "v5.channel.k8s.io"}},
		{name: "websocket subprotocol alone", headers: append([]string{"Sec-WebSocket-Protocol", wsToken("admin-token")}, ws...),
			wantErr: "missing additional subprotocol"},
		{name: "two websocket tokens", headers: append([]string{"Sec-WebSocket-Protocol", wsToken("a") + "," + wsToken("b") + ",v5"}, ws...),
			wantErr: "multiple base64.bearer.authorization tokens specified"},
		{name: "websocket token not base64url", headers: append([]string{"Sec-WebSocket-Protocol", "base64url.bearer.authorization.k8s.io.!!,v5"}, ws...),
			wantErr: "invalid base64.bearer.authorization token encoding"},
		{name: "subprotocol of a request that is no upgrade", headers: []string{"Sec-WebSocket-Protocol", wsToken("admin-token") + ",v5"}},
		{name: "header refused, subprotocol accepted",
			headers: append([]string{"Authorization", "Bearer nobody", "Sec-WebSocket-Protocol", wsToken("admin-token") + ",v5"}, ws...),
			want:    admin, wantReviews: []string{"nobody", "admin-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &tokenServer{}
			if tc.serverErr != nil || tc.status != nil {
				s.answer = func(authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
					return tc.status, tc.serverErr
				}
			}
			a := newTokenAuth(t, s, apiserver.TokenReviewOptions{})
			r := request(tc.headers...)
			u, ok, err := a.AuthenticateRequest(r)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			}
			if tc.wantErrIs != nil {
				require.ErrorIs(t, err, tc.wantErrIs)
			}
			if tc.wantErr == "" && tc.wantErrIs == nil {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want != nil, ok, "ok")
			assert.Equal(t, tc.want, u)
			var reviewed []string
			for _, spec := range s.reviews {
				reviewed = append(reviewed, spec.Token)
				assert.Empty(t, spec.Audiences, "audiences: none by default")
			}
			assert.Equal(t, tc.wantReviews, reviewed)
			for h, v := range tc.wantHeaders {
				assert.Equal(t, v, r.Header.Get(h), h)
			}
		})
	}
}

// With Audiences, the review asks for them and a token is taken only when
// the status names one.
func TestTokenReviewAudiences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status []string
		ok     bool
	}{
		{name: "one of ours", status: []string{"other", "kubelet"}, ok: true},
		{name: "none of ours", status: []string{"other"}},
		{name: "none named", status: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &tokenServer{answer: func(spec authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
				assert.Equal(t, []string{"kubelet", "node"}, spec.Audiences)
				return &authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: tc.status, User: tokenUsers["admin-token"]}, nil
			}}
			a := newTokenAuth(t, s, apiserver.TokenReviewOptions{Audiences: []string{"kubelet", "node"}})
			_, ok, err := a.AuthenticateToken(context.Background(), "admin-token")
			assert.Equal(t, tc.ok, ok)
			if !tc.ok {
				assert.ErrorIs(t, err, apiserver.ErrInvalidToken)
			}
		})
	}
}

// Answers are kept CacheTTL (2m by default), refusals too; the server's
// reasons and failed reviews are not kept.
func TestTokenReviewCache(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		token  string
		status *authenticationv1.TokenReviewStatus
		err    error
		kept   time.Duration // 0: not kept
	}{
		{name: "authenticated, default TTL", token: "admin-token", kept: 2 * time.Minute},
		{name: "refused, default TTL", token: "nobody", kept: 2 * time.Minute},
		{name: "authenticated, own TTL", ttl: 10 * time.Second, token: "node-token", kept: 10 * time.Second},
		{name: "no cache", ttl: -1, token: "admin-token"},
		{name: "the server's reason is not kept", token: "old", status: &authenticationv1.TokenReviewStatus{Error: "token has expired"}},
		{name: "a failed review is not kept", token: "admin-token", err: apierrors.NewServiceUnavailable("down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &tokenServer{}
			if tc.err != nil || tc.status != nil {
				s.answer = func(authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
					return tc.status, tc.err
				}
			}
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			a := newTokenAuth(t, s, apiserver.TokenReviewOptions{CacheTTL: tc.ttl, Clock: clk})
			checkKept(t, clk, tc.kept, s.count, func() (any, error) {
				u, _, err := a.AuthenticateToken(context.Background(), tc.token)
				return u, err
			})
		})
	}
}

// checkKept checks that call's answer is kept for kept on clk: reviewed
// once, answered the same until then, reviewed again after; with kept 0,
// that every call is reviewed. reviews counts the reviews made.
func checkKept(t *testing.T, clk *clocktesting.FakeClock, kept time.Duration, reviews func() int, call func() (any, error)) {
	t.Helper()
	n := reviews()
	first, firstErr := call()
	require.Equal(t, n+1, reviews(), "reviewed")
	if kept == 0 {
		_, _ = call()
		assert.Equal(t, n+2, reviews(), "reviewed again")
		return
	}
	clk.Step(kept)
	again, againErr := call()
	assert.Equal(t, n+1, reviews(), "kept until the TTL")
	assert.Equal(t, first, again)
	assert.Equal(t, firstErr, againErr)
	clk.Step(time.Nanosecond)
	_, _ = call()
	assert.Equal(t, n+2, reviews(), "reviewed again after the TTL")
}

// A cached user is a copy: a caller that changes it changes nothing for
// the next.
func TestTokenReviewCacheCopies(t *testing.T) {
	a := newTokenAuth(t, &tokenServer{}, apiserver.TokenReviewOptions{})
	u, _, err := a.AuthenticateToken(context.Background(), "node-token")
	require.NoError(t, err)
	u.Groups[0] = "system:masters"
	u.Extra["scopes"][0] = "all"
	again, _, err := a.AuthenticateToken(context.Background(), "node-token")
	require.NoError(t, err)
	assert.Equal(t, []string{"system:nodes", "system:authenticated"}, again.Groups)
	assert.Equal(t, []string{"a", "b"}, again.Extra["scopes"])
}

// Requests with the same token share one review; one whose context ends
// first returns at once, and the review still fills the cache.
func TestTokenReviewSharedLookup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := &tokenServer{answer: func(spec authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
			<-release
			return &authenticationv1.TokenReviewStatus{Authenticated: true, User: tokenUsers[spec.Token]}, nil
		}}
		a := newTokenAuth(t, s, apiserver.TokenReviewOptions{})
		var wg sync.WaitGroup
		users := make([]*server.User, 3)
		for i := range users {
			wg.Go(func() {
				u, _, err := a.AuthenticateToken(context.Background(), "admin-token")
				assert.NoError(t, err)
				users[i] = u
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		impatient := make(chan error, 1)
		go func() { _, _, err := a.AuthenticateToken(ctx, "admin-token"); impatient <- err }()
		synctest.Wait()
		assert.Equal(t, 1, s.count(), "one review for four requests")
		cancel()
		assert.ErrorIs(t, <-impatient, context.Canceled)
		close(release)
		wg.Wait()
		for _, u := range users {
			assert.Equal(t, "admin", u.Name)
		}
		synctest.Wait() // the lookup has kept its answer and ended
		_, ok, err := a.AuthenticateToken(context.Background(), "admin-token")
		assert.True(t, ok)
		assert.NoError(t, err)
		assert.Equal(t, 1, s.count(), "answered from the cache")
	})
}

// A review that failed for a transient reason is tried again, five times
// in all, 500ms then 1.5 times longer each time with up to 20% jitter (as
// upstream); other failures are final at once.
func TestWebhookRetries(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd"))
	for _, tc := range []struct {
		name      string
		errs      []error // one per attempt; past the end, success
		wantCalls int
		wantErr   bool
		minWait   time.Duration
		maxWait   time.Duration
	}{
		{name: "internal error, then success", errs: []error{internal}, wantCalls: 2, minWait: 500 * time.Millisecond, maxWait: 600 * time.Millisecond},
		{name: "throttled twice", errs: []error{apierrors.NewTooManyRequests("slow down", 0), apierrors.NewTimeoutError("t", 0)},
			wantCalls: 3, minWait: 1250 * time.Millisecond, maxWait: 1500 * time.Millisecond},
		{name: "always failing", errs: []error{internal, internal, internal, internal, internal, internal}, wantCalls: 5, wantErr: true,
			minWait: 4062500 * time.Microsecond, maxWait: 4875 * time.Millisecond},
		{name: "forbidden is final", errs: []error{apierrors.NewForbidden(schema.GroupResource{Resource: "tokenreviews"}, "", errors.New("no"))},
			wantCalls: 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				failing := func(n int) error {
					if n < len(tc.errs) {
						return tc.errs[n]
					}
					return nil
				}
				// Token reviews and access reviews retry alike.
				tokens := &tokenServer{answer: func(authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
					return &authenticationv1.TokenReviewStatus{Authenticated: true, User: tokenUsers["admin-token"]}, nil
				}}
				calls := 0
				inner := tokens.answer
				tokens.answer = func(spec authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReviewStatus, error) {
					calls++
					if err := failing(calls - 1); err != nil {
						return nil, err
					}
					return inner(spec)
				}
				client := fake.NewClientset()
				client.PrependReactor("create", "tokenreviews", tokens.react)
				a, err := apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(), apiserver.TokenReviewOptions{})
				require.NoError(t, err)
				start := time.Now()
				_, ok, err := a.AuthenticateToken(context.Background(), "admin-token")
				took := time.Since(start)
				assert.Equal(t, !tc.wantErr, ok)
				assert.Equal(t, tc.wantErr, err != nil, "err %v", err)
				assert.Equal(t, tc.wantCalls, calls, "token reviews")
				assert.GreaterOrEqual(t, took, tc.minWait)
				assert.LessOrEqual(t, took, tc.maxWait)

				sars := 0
				client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
					sars++
					if err := failing(sars - 1); err != nil {
						return true, nil, err
					}
					return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
				})
				z, err := apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{})
				require.NoError(t, err)
				d, _, err := z.Authorize(context.Background(), server.Attributes{Verb: "get", Resource: "nodes", Subresource: "proxy"})
				assert.Equal(t, tc.wantErr, err != nil, "err %v", err)
				assert.Equal(t, !tc.wantErr, d == server.DecisionAllow)
				assert.Equal(t, tc.wantCalls, sars, "access reviews")
			})
		})
	}
}

// The end of the caller's context stops a retrying access review.
func TestWebhookRetryCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("etcd"))
		})
		z, err := apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		d, _, err := z.Authorize(ctx, server.Attributes{Verb: "get"})
		assert.Equal(t, server.DecisionNoOpinion, d)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "etcd")
	})
}

// accessServer answers SubjectAccessReviews with a fixed status and
// records them.
type accessServer struct {
	specLog[authorizationv1.SubjectAccessReviewSpec]
	status authorizationv1.SubjectAccessReviewStatus
	err    error
}

func (s *accessServer) react(action k8stesting.Action) (bool, runtime.Object, error) {
	spec := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).Spec
	s.add(spec)
	if s.err != nil {
		return true, nil, s.err
	}
	return true, &authorizationv1.SubjectAccessReview{Spec: spec, Status: s.status}, nil
}

func newAccessAuth(t *testing.T, s *accessServer, opts apiserver.SubjectAccessReviewOptions) *apiserver.SubjectAccessReviewAuthorizer {
	t.Helper()
	opts.Backoff = orNoRetry(opts.Backoff)
	a, err := apiserver.NewSubjectAccessReviewAuthorizer(reviewClient("subjectaccessreviews", s.react).AuthorizationV1(), opts)
	require.NoError(t, err)
	return a
}

var proxyAttrs = server.Attributes{
	User: &server.User{Name: "jane", UID: "uid-jane", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"x"}}},
	Verb: "create", APIVersion: "v1", Resource: "nodes", Subresource: "proxy", Name: "n1", Path: "/exec/ns/p/c",
}

// The review carries the user and the node's resource attributes; its
// status is the decision.
func TestSubjectAccessReviewAuthorize(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     authorizationv1.SubjectAccessReviewStatus
		err        error
		want       server.Decision
		wantReason string
		wantErr    string
	}{
		{name: "allowed", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by ClusterRoleBinding "x"`},
			want: server.DecisionAllow, wantReason: `RBAC: allowed by ClusterRoleBinding "x"`},
		{name: "denied", status: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}, want: server.DecisionDeny, wantReason: "no"},
		{name: "no opinion", status: authorizationv1.SubjectAccessReviewStatus{}, want: server.DecisionNoOpinion},
		{name: "both", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}, want: server.DecisionDeny,
			wantErr: "webhook subject access review returned both allow and deny response"},
		{name: "review failed", err: apierrors.NewServiceUnavailable("down"), want: server.DecisionNoOpinion, wantErr: "subject access review: down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &accessServer{status: tc.status, err: tc.err}
			a := newAccessAuth(t, s, apiserver.SubjectAccessReviewOptions{})
			d, reason, err := a.Authorize(context.Background(), proxyAttrs)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, d)
			assert.Equal(t, tc.wantReason, reason)
			require.Len(t, s.reviews, 1)
			assert.Equal(t, authorizationv1.SubjectAccessReviewSpec{
				User: "jane", UID: "uid-jane", Groups: []string{"dev", "system:authenticated"},
				Extra: map[string]authorizationv1.ExtraValue{"scopes": {"x"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Version: "v1", Resource: "nodes",
					Subresource: "proxy", Name: "n1"},
			}, s.reviews[0])
		})
	}
}

// Allowed reviews are kept 5m, the others 30s, failures not at all; each
// request's attributes are a review of their own; huge ones are not kept.
func TestSubjectAccessReviewCache(t *testing.T) {
	huge := proxyAttrs
	huge.Path = "/" + strings.Repeat("x", 10000)
	other := proxyAttrs
	other.Subresource = "log"
	for _, tc := range []struct {
		name   string
		opts   apiserver.SubjectAccessReviewOptions
		status authorizationv1.SubjectAccessReviewStatus
		err    error
		attrs  server.Attributes
		kept   time.Duration // 0: not kept
	}{
		{name: "allowed", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}, attrs: proxyAttrs, kept: 5 * time.Minute},
		{name: "denied", status: authorizationv1.SubjectAccessReviewStatus{Denied: true}, attrs: proxyAttrs, kept: 30 * time.Second},
		{name: "no opinion", attrs: proxyAttrs, kept: 30 * time.Second},
		{name: "own TTLs", opts: apiserver.SubjectAccessReviewOptions{AllowCacheTTL: time.Minute}, status: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			attrs: proxyAttrs, kept: time.Minute},
		{name: "allowed not kept", opts: apiserver.SubjectAccessReviewOptions{AllowCacheTTL: -1}, status: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			attrs: proxyAttrs},
		{name: "failure not kept", err: apierrors.NewServiceUnavailable("down"), attrs: proxyAttrs},
		{name: "huge attributes not kept", status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}, attrs: huge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &accessServer{status: tc.status, err: tc.err}
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			tc.opts.Clock = clk
			a := newAccessAuth(t, s, tc.opts)
			// Another subresource was reviewed (and kept) first: it is
			// another review.
			_, _, _ = a.Authorize(context.Background(), other)
			checkKept(t, clk, tc.kept, s.count, func() (any, error) {
				d, _, err := a.Authorize(context.Background(), tc.attrs)
				return d, err
			})
		})
	}
}

// Constructors refuse a missing client and a negative cache size.
func TestWebhookAuthInvalid(t *testing.T) {
	client := fake.NewClientset()
	_, err := apiserver.NewTokenReviewAuthenticator(nil, apiserver.TokenReviewOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	_, err = apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(), apiserver.TokenReviewOptions{CacheSize: -1})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	_, err = apiserver.NewSubjectAccessReviewAuthorizer(nil, apiserver.SubjectAccessReviewOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	_, err = apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{CacheSize: -1})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}
