package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/server"
)

// Defaults of SubjectAccessReviewOptions, upstream kubelet's.
const (
	// DefaultAllowCacheTTL is how long an allowed review is kept
	// (--authorization-webhook-cache-authorized-ttl).
	DefaultAllowCacheTTL = 5 * time.Minute
	// DefaultDenyCacheTTL is how long a review that did not allow is kept
	// (--authorization-webhook-cache-unauthorized-ttl).
	DefaultDenyCacheTTL = 30 * time.Second
	// DefaultAccessCacheSize bounds how many reviews are kept; the least
	// recently used goes first.
	DefaultAccessCacheSize = 8192
	// maxCachedAttributes: a request whose attributes are this long or
	// longer is not cached, so that requesters cannot fill the cache with
	// huge keys (upstream's bound).
	maxCachedAttributes = 10000
)

// SubjectAccessReviewOptions configure a SubjectAccessReviewAuthorizer. The
// zero value is upstream kubelet's defaults.
type SubjectAccessReviewOptions struct {
	// AllowCacheTTL is how long an allowed review is kept: 0 means
	// DefaultAllowCacheTTL (5m), a negative value not at all.
	AllowCacheTTL time.Duration
	// DenyCacheTTL is how long a review that did not allow (denied, or no
	// opinion) is kept: 0 means DefaultDenyCacheTTL (30s), a negative
	// value not at all. Errors are never kept.
	DenyCacheTTL time.Duration
	// CacheSize bounds the cache; 0 means DefaultAccessCacheSize.
	CacheSize int
	// Backoff retries a review that failed for a transient reason; the
	// zero value means DefaultWebhookBackoff, Steps 1 no retry.
	Backoff wait.Backoff
	// Clock gives the cache its time and the retries their waits; nil
	// means the real clock.
	Clock clock.Clock
	// Logger receives the reviews that failed; nil discards them.
	Logger *slog.Logger
}

// SubjectAccessReviewAuthorizer is a server.Authorizer that asks the API
// server's SubjectAccessReview, as upstream kubelet's
// --authorization-mode=Webhook does. It is safe for concurrent use.
type SubjectAccessReviewAuthorizer struct {
	reviews           authorizationv1client.SubjectAccessReviewInterface
	clk               clock.Clock
	log               *slog.Logger
	backoff           wait.Backoff
	allowTTL, denyTTL time.Duration
	cache             *utilcache.LRUExpireCache // by the review's spec in JSON: its status
}

var _ server.Authorizer = (*SubjectAccessReviewAuthorizer)(nil)

// NewSubjectAccessReviewAuthorizer returns an authorizer that asks reviews
// (client.AuthorizationV1()). It starts no goroutine.
func NewSubjectAccessReviewAuthorizer(reviews authorizationv1client.SubjectAccessReviewsGetter, opts SubjectAccessReviewOptions) (*SubjectAccessReviewAuthorizer, error) {
	if reviews == nil {
		return nil, fmt.Errorf("new subject access review authorizer: client is nil: %w", ErrInvalidArgument)
	}
	if opts.CacheSize < 0 {
		return nil, fmt.Errorf("new subject access review authorizer: cache size %d is negative: %w", opts.CacheSize, ErrInvalidArgument)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultAccessCacheSize
	}
	a := &SubjectAccessReviewAuthorizer{reviews: reviews.SubjectAccessReviews(), clk: orClock(opts.Clock), log: opts.Logger,
		backoff: orBackoff(opts.Backoff), allowTTL: ttlOr(opts.AllowCacheTTL, DefaultAllowCacheTTL), denyTTL: ttlOr(opts.DenyCacheTTL, DefaultDenyCacheTTL)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.cache = utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, a.clk)
	return a, nil
}

// Authorize asks whether attrs.User may do attrs.Verb on the node's
// subresource: a SubjectAccessReview of the user's name, UID, groups and
// extra, with resource attributes of attrs' verb, group, version,
// resource, subresource and name (no namespace). The review's allowed is
// DecisionAllow, denied DecisionDeny, neither DecisionNoOpinion, each with
// the server's reason; a review that both allows and denies is a Deny and
// an error. A review that could not be made is DecisionNoOpinion and an
// error (the server answers 500).
func (a *SubjectAccessReviewAuthorizer) Authorize(ctx context.Context, attrs server.Attributes) (server.Decision, string, error) {
	spec := SubjectAccessReviewSpec(attrs)
	key, err := json.Marshal(spec)
	if err != nil {
		return server.DecisionNoOpinion, "", fmt.Errorf("subject access review: %w", err)
	}
	var st authorizationv1.SubjectAccessReviewStatus
	if v, ok := a.cache.Get(string(key)); ok {
		st = v.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		req := &authorizationv1.SubjectAccessReview{Spec: spec}
		var got *authorizationv1.SubjectAccessReview
		err := withBackoff(ctx, a.clk, a.backoff, func(ctx context.Context) error {
			var err error
			got, err = a.reviews.Create(ctx, req, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			a.log.Error("Failed to make webhook authorizer request", "err", err)
			return server.DecisionNoOpinion, "", fmt.Errorf("subject access review: %w", err)
		}
		st = got.Status
		ttl := a.denyTTL
		if st.Allowed {
			ttl = a.allowTTL
		}
		if ttl > 0 && attributesSize(attrs) < maxCachedAttributes {
			a.cache.Add(string(key), st, ttl)
		}
	}
	switch {
	case st.Allowed && st.Denied:
		return server.DecisionDeny, st.Reason, errors.New("webhook subject access review returned both allow and deny response")
	case st.Denied:
		return server.DecisionDeny, st.Reason, nil
	case st.Allowed:
		return server.DecisionAllow, st.Reason, nil
	}
	return server.DecisionNoOpinion, st.Reason, nil
}

// SubjectAccessReviewSpec is the review Authorize asks for attrs: the
// user's name, UID, groups and extra (none for a nil user), and the
// resource attributes of the request (verb, group, version, resource,
// subresource, name; no namespace, nodes are not namespaced).
func SubjectAccessReviewSpec(attrs server.Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if u := attrs.User; u != nil {
		spec.User, spec.UID, spec.Groups = u.Name, u.UID, u.Groups
		if u.Extra != nil {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				spec.Extra[k] = v
			}
		}
	}
	spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: attrs.Verb, Group: attrs.APIGroup, Version: attrs.APIVersion,
		Resource: attrs.Resource, Subresource: attrs.Subresource, Name: attrs.Name}
	return spec
}

// attributesSize is how long the parts of attrs a requester controls are.
func attributesSize(attrs server.Attributes) int {
	return len(attrs.Verb) + len(attrs.APIGroup) + len(attrs.APIVersion) + len(attrs.Resource) +
		len(attrs.Subresource) + len(attrs.Name) + len(attrs.Path)
}
