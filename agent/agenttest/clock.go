package agenttest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is the fake time of a Node: every block of its agent and its fake
// runtime read it. It moves only when the Node steps it, and it fires the
// timers, tickers and AfterFuncs that come due one at a time, so that a
// Node can let the consequences of each one settle before the next fires.
//
// The order is that of their deadlines; for equal deadlines, that of the
// code that made them (function and line, the same from run to run
// whatever the goroutines' scheduling), then of their making. It is safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	waiters []*waiter
	sites   map[uintptr]string // creators' function and line, by PC
}

var _ clock.WithTickerAndDelayedExecution = (*Clock)(nil)

// waiter is one pending timer, ticker or AfterFunc.
type waiter struct {
	c      *Clock
	at     time.Time
	seq    uint64
	site   uintptr       // the PC of the code that made it
	period time.Duration // tickers
	ch     chan time.Time
	fn     func()
}

func newClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the fake time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// After returns a channel that receives the fake time once d has passed.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// NewTimer returns a timer that fires once d has passed.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	w := &waiter{c: c, ch: make(chan time.Time, 1)}
	c.add(w, d)
	return (*timer)(w)
}

// AfterFunc calls f in its own goroutine once d has passed.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	w := &waiter{c: c, fn: f}
	c.add(w, d)
	return (*timer)(w)
}

// Tick returns the channel of a ticker that is never stopped.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

// NewTicker returns a ticker of period d. As a real ticker's, its channel
// holds one tick, and ticks a slow reader misses are dropped.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("agenttest: non-positive ticker period")
	}
	w := &waiter{c: c, ch: make(chan time.Time, 1), period: d}
	c.add(w, d)
	return (*ticker)(w)
}

// Sleep blocks until the Node has stepped the clock past d.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

func (c *Clock) add(w *waiter, d time.Duration) {
	w.site = creator()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(w, c.now.Add(d))
}

func (c *Clock) addLocked(w *waiter, at time.Time) {
	c.seq++
	w.at, w.seq = at, c.seq
	c.waiters = append(c.waiters, w)
}

// remove takes w off the pending list and reports whether it was there.
func (c *Clock) remove(w *waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removeLocked(w)
}

func (c *Clock) removeLocked(w *waiter) bool {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// next returns the earliest pending deadline.
func (c *Clock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.firstLocked()
	if w == nil {
		return time.Time{}, false
	}
	return w.at, true
}

func (c *Clock) firstLocked() *waiter {
	var first *waiter
	for _, w := range c.waiters {
		if first == nil || c.beforeLocked(w, first) {
			first = w
		}
	}
	return first
}

// beforeLocked orders waiters by deadline, then by the code that made them,
// then by when they were made.
func (c *Clock) beforeLocked(a, b *waiter) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.site != b.site {
		return c.siteLocked(a.site) < c.siteLocked(b.site)
	}
	return a.seq < b.seq
}

func (c *Clock) siteLocked(pc uintptr) string {
	if s, ok := c.sites[pc]; ok {
		return s
	}
	if c.sites == nil {
		c.sites = map[uintptr]string{}
	}
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	s := fmt.Sprintf("%s:%d", frame.Function, frame.Line)
	c.sites[pc] = s
	return s
}

// creator returns the PC of the first caller outside this file's methods.
func creator() uintptr {
	var pcs [8]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, clockPrefix) {
			return f.PC
		}
		if !more {
			return f.PC
		}
	}
}

// clockPrefix begins the names of the Clock's methods.
var clockPrefix = reflectName()

// set moves the clock to t, which must not be before now; it fires nothing.
func (c *Clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// fireOne fires the earliest waiter that is due and reports whether there
// was one. A ticker is rearmed for its next period after now.
func (c *Clock) fireOne() bool {
	c.mu.Lock()
	w := c.firstLocked()
	if w == nil || w.at.After(c.now) {
		c.mu.Unlock()
		return false
	}
	c.removeLocked(w)
	now := c.now
	if w.period > 0 {
		at := w.at
		for !at.After(now) {
			at = at.Add(w.period)
		}
		c.addLocked(w, at)
	}
	c.mu.Unlock()
	switch {
	case w.fn != nil:
		go w.fn()
	case w.period > 0:
		select {
		case w.ch <- now:
		default: // a tick the reader missed
		}
	default:
		w.ch <- now
	}
	return true
}

// timer is a Clock timer or AfterFunc.
type timer waiter

// C returns the timer's channel (nil for an AfterFunc).
func (t *timer) C() <-chan time.Time { return t.ch }

// Stop prevents the timer from firing and reports whether it was pending.
func (t *timer) Stop() bool { return t.c.remove((*waiter)(t)) }

// Reset makes the timer fire once d has passed from now, and reports
// whether it was pending.
func (t *timer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.removeLocked((*waiter)(t))
	c.addLocked((*waiter)(t), c.now.Add(d))
	return was
}

// ticker is a Clock ticker.
type ticker waiter

// C returns the ticker's channel.
func (t *ticker) C() <-chan time.Time { return t.ch }

// Stop stops the ticker.
func (t *ticker) Stop() { t.c.remove((*waiter)(t)) }

// reflectName returns "<package path>.(*Clock)." for this package.
func reflectName() string {
	pc, _, _, _ := runtime.Caller(0)
	name := runtime.FuncForPC(pc).Name() // <path>.reflectName
	return strings.TrimSuffix(name, "reflectName") + "(*Clock)."
}
