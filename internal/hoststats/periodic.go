package hoststats

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Periodic keeps one measurement per pod and renews it when it is due: when
// the pod is first seen, then each time Period and a random jitter of up to
// one more Period have passed (upstream's volume stats use
// --volume-stats-agg-period with a jitter factor of 1.0). A Period of zero
// or less measures at every Get. It is safe for concurrent use; the zero
// value is not usable, make one with NewPeriodic.
type Periodic[T any] struct {
	period time.Duration

	mu sync.Mutex
	m  map[types.UID]periodicEntry[T]
}

type periodicEntry[T any] struct {
	v    T
	next time.Time
}

// NewPeriodic returns a Periodic renewing measurements every period (plus
// jitter).
func NewPeriodic[T any](period time.Duration) *Periodic[T] {
	return &Periodic[T]{period: period, m: map[types.UID]periodicEntry[T]{}}
}

// Get returns the pod's last measurement, or calls measure (without any
// lock held) and keeps what it returns when the pod's measurement is due.
// The value is shared between calls: treat it as read-only.
func (p *Periodic[T]) Get(uid types.UID, now time.Time, measure func() T) T {
	if p.period <= 0 {
		return measure()
	}
	p.mu.Lock()
	e, ok := p.m[uid]
	p.mu.Unlock()
	if ok && now.Before(e.next) {
		return e.v
	}
	v := measure()
	next := now.Add(p.period + time.Duration(rand.Int64N(int64(p.period))))
	p.mu.Lock()
	p.m[uid] = periodicEntry[T]{v: v, next: next}
	p.mu.Unlock()
	return v
}

// Retain forgets the measurements of the pods for which keep is false.
func (p *Periodic[T]) Retain(keep func(types.UID) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.m {
		if !keep(uid) {
			delete(p.m, uid)
		}
	}
}

// Len is the number of pods with a measurement.
func (p *Periodic[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
