package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// ErrInvalidArgument is wrapped by a constructor's error when a required
// dependency (a client, the node's name, a channel) is missing or a value is
// out of range.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrAccessDenied is wrapped by CheckAccess's error when the API server
// refuses the agent one or more of the verbs it needs.
var ErrAccessDenied = errors.New("access denied")

// Retry bounds the retries of one write to the API server. The zero value
// is the documented defaults.
type Retry struct {
	// Attempts is how many times a call is tried in all; 0 means 5
	// (upstream's nodeStatusUpdateRetry). 1 means no retry.
	Attempts int
	// Base is the wait after the first failure, doubled after each
	// further one; 0 means 100ms.
	Base time.Duration
	// Max caps the wait; 0 means 2s.
	Max time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.Base <= 0 {
		r.Base = 100 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 2 * time.Second
	}
	return r
}

// Retryable reports whether err is worth trying again: a conflict, a
// timeout, throttling, an internal error or an unavailable server, or an
// error that carries no API status at all (the connection failed). A
// NotFound, Forbidden, Invalid, AlreadyExists and the end of a context are
// not.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
		return true
	}
	var st apierrors.APIStatus
	return !errors.As(err, &st)
}

// do calls f until it succeeds, fails with an error that is not Retryable,
// ctx ends or the attempts are spent; it returns f's last error. Waits are
// on clk.
func (r Retry) do(ctx context.Context, clk clock.Clock, f func(ctx context.Context) error) error {
	return r.doIf(ctx, clk, Retryable, f)
}

// doIf is do with retryable deciding which errors are tried again.
func (r Retry) doIf(ctx context.Context, clk clock.Clock, retryable func(error) bool, f func(ctx context.Context) error) error {
	r = r.withDefaults()
	wait := r.Base
	var err error
	for attempt := 1; ; attempt++ {
		if err = f(ctx); err == nil || !retryable(err) || attempt >= r.Attempts {
			return err
		}
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up waiting to retry: %w)", err, ctx.Err())
		case <-t.C():
		}
		wait = min(wait*2, r.Max)
	}
}

func orClock(c clock.Clock) clock.Clock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}
