package podworkers

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrMissingDependency is wrapped by New when a required dependency
	// (Syncer, StatusWaiter) is missing from Options.
	ErrMissingDependency = errors.New("missing dependency")
	// ErrInvalidOptions is wrapped by New and NewMachine when an option has an
	// invalid value (a negative duration).
	ErrInvalidOptions = errors.New("invalid options")
	// ErrInvalidUpdate is wrapped by Machine.Update for an update the workers
	// cannot act on: neither Pod nor RunningPod set, or a RunningPod with an
	// update type other than SyncPodKill.
	ErrInvalidUpdate = errors.New("invalid update")
	// ErrNoWorkInFlight is wrapped by Machine.Complete when no work taken
	// with Next is outstanding for the pod: a bug in the driver.
	ErrNoWorkInFlight = errors.New("no work in flight")
	// ErrStopped is wrapped by Workers.KillPod and Workers.Run once Run has
	// returned.
	ErrStopped = errors.New("pod workers stopped")
)

// RetryAfterError asks for a failed sync to be retried after Delay (plus the
// same jitter as backoff) instead of after the backoff period. Upstream retries
// after 1s when the network is not ready; a Syncer returns RetryAfter(time.Second,
// err) for that.
type RetryAfterError struct {
	// Delay is how long to wait before the retry.
	Delay time.Duration
	// Err is the sync error.
	Err error
}

// RetryAfter wraps err so that the pod is retried after d.
func RetryAfter(d time.Duration, err error) error {
	return &RetryAfterError{Delay: d, Err: err}
}

// Error returns the message of the wrapped error and the delay.
func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.Delay)
}

// Unwrap returns the wrapped error.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// BackoffExpirer is implemented by sync errors that know when the back-off
// they ran into ends, such as cri/podsync's CrashLoopBackOff errors.
type BackoffExpirer interface {
	BackoffExpiration() time.Time
}

// MinBackoffExpiration returns the earliest BackoffExpiration among the
// errors in err's tree (followed through Unwrap() error and Unwrap()
// []error), and whether there is one. A failed sync whose error has one is
// retried when that back-off ends, as upstream's kubelet does, rather than
// after the generic back-off period.
func MinBackoffExpiration(err error) (time.Time, bool) {
	var earliest time.Time
	found := false
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if b, ok := e.(BackoffExpirer); ok {
			if t := b.BackoffExpiration(); !found || t.Before(earliest) {
				earliest, found = t, true
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return earliest, found
}
