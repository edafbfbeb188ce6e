package apiserver

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/server"
)

// DefaultWebhookBackoff is how a TokenReview or a SubjectAccessReview that
// failed for a transient reason is tried again, as upstream kubelet's
// webhooks are: five attempts in all, 500ms after the first failure, then
// each wait 1.5 times the last, with up to 20% jitter.
func DefaultWebhookBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// webhookRetryable reports whether a review's error is transient as
// upstream's webhooks judge it: a reset or lost connection, an internal
// error, a timeout, throttling, or any answer that asks to be retried
// later (Retry-After).
func webhookRetryable(err error) bool {
	if err == nil {
		return false
	}
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, later := apierrors.SuggestsClientDelay(err)
	return later
}

// withBackoff calls review until it succeeds, fails for a reason that is
// not transient, or b's steps are spent, waiting on clk between attempts;
// it returns review's last error. The end of ctx stops the waiting.
func withBackoff(ctx context.Context, clk clock.Clock, b wait.Backoff, review func(context.Context) error) error {
	for {
		err := review(ctx)
		if !webhookRetryable(err) || b.Steps <= 1 {
			return err
		}
		t := clk.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C():
		}
	}
}

// orBackoff returns b, or DefaultWebhookBackoff for the zero value.
func orBackoff(b wait.Backoff) wait.Backoff {
	if b == (wait.Backoff{}) {
		return DefaultWebhookBackoff()
	}
	return b
}

// ttlOr returns ttl, def for 0, and 0 (no caching) for a negative ttl.
func ttlOr(ttl, def time.Duration) time.Duration {
	switch {
	case ttl == 0:
		return def
	case ttl < 0:
		return 0
	}
	return ttl
}

// copyUser returns a deep copy of u, so that a cached user is never
// changed by a caller.
func copyUser(u *server.User) *server.User {
	c := &server.User{Name: u.Name, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if u.Extra != nil {
		c.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			c.Extra[k] = append([]string(nil), v...)
		}
	}
	return c
}
