package podresources

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

const (
	// DefaultQPS is how many calls a second the API answers in the long
	// run, upstream's.
	DefaultQPS = 100
	// DefaultBurst is how many calls it answers at once, upstream's.
	DefaultBurst = 10
)

// ErrRateLimited is the answer to a call over the rate limit, upstream's:
// code ResourceExhausted, "rejected by rate limit".
var ErrRateLimited = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// Limiter is a token bucket on a clock: it holds up to burst tokens, gains
// qps of them a second, and each allowed call takes one. It starts full.
// It is safe for concurrent use.
type Limiter struct {
	clock clock.PassiveClock
	qps   float64
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// NewLimiter returns a full Limiter.
func NewLimiter(clk clock.PassiveClock, qps float64, burst int) *Limiter {
	return &Limiter{clock: clk, qps: qps, burst: float64(burst), tokens: float64(burst), last: clk.Now()}
}

// Allow takes a token and reports whether there was one.
func (l *Limiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if elapsed := now.Sub(l.last); elapsed > 0 {
		l.tokens = min(l.burst, l.tokens+elapsed.Seconds()*l.qps)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
