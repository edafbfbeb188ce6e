package watchdog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

const (
	// MinTimeout is the shortest watchdog timeout refused: a timeout must
	// be longer, as upstream's, which would otherwise ping more often
	// than every half second.
	MinTimeout = time.Second
	// RetryPeriod is the wait before a failed notification is sent again.
	RetryPeriod = time.Second
	// Attempts is how many times one tick sends its notification before
	// it gives up until the next tick.
	Attempts = 2
)

var (
	// ErrTimeoutTooSmall is returned by New for a timeout of MinTimeout or
	// less.
	ErrTimeoutTooSmall = errors.New("configure watchdog timeout too small")
	// ErrNotSupported is logged when the Notifier found nothing to notify
	// (NOTIFY_SOCKET unset): the process does not run under systemd's
	// notification protocol, and sending again does not help.
	ErrNotSupported = errors.New("failed to notify systemd watchdog, notification not supported - (i.e. NOTIFY_SOCKET is unset)")
)

// Check is one health check a tick runs before it notifies, as one of
// upstream's healthz checkers: Name says which failed.
type Check struct {
	// Name names the check in the log ("syncloop").
	Name string
	// Check returns nil when healthy, else the reason.
	Check func() error
}

// Unhealthy returns the first of checks that fails, as "checker <name>
// failed: <reason>", or nil when all pass (or there are none): whether a
// tick notifies systemd.
func Unhealthy(checks []Check) error {
	for _, c := range checks {
		if c.Check == nil {
			continue
		}
		if err := c.Check(); err != nil {
			return fmt.Errorf("checker %s failed: %w", c.Name, err)
		}
	}
	return nil
}

// Interval is how often a watchdog with timeout notifies: half of it, as
// systemd's sd_watchdog_enabled(3) advises and upstream does.
func Interval(timeout time.Duration) time.Duration { return timeout / 2 }

// Options configure a Watchdog.
type Options struct {
	// Timeout is the unit's watchdog timeout (Enabled). Zero means the
	// watchdog is not enabled: Run logs so and returns at once.
	Timeout time.Duration
	// Checks run, in order, before each notification; empty means always
	// healthy.
	Checks []Check
	// Notifier sends the notification; nil means Systemd.
	Notifier Notifier
	// Clock times the ticks and retries; nil means the real clock.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// Watchdog notifies systemd's watchdog every Interval while its checks
// pass.
type Watchdog struct {
	o   Options
	log *slog.Logger
}

// New validates o and returns a Watchdog; it starts nothing. A timeout of
// MinTimeout or less is refused with ErrTimeoutTooSmall.
func New(o Options) (*Watchdog, error) {
	switch {
	case o.Timeout < 0:
		return nil, fmt.Errorf("watchdog: negative timeout %v", o.Timeout)
	case o.Timeout > 0 && o.Timeout <= MinTimeout:
		return nil, fmt.Errorf("%w: %v", ErrTimeoutTooSmall, o.Timeout)
	}
	if o.Notifier == nil {
		o.Notifier = Systemd{}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watchdog{o: o, log: log}, nil
}

// Interval returns how often w notifies; zero when it is not enabled.
func (w *Watchdog) Interval() time.Duration { return Interval(w.o.Timeout) }

// Run notifies systemd every Interval while the checks pass, the first
// time at once, until ctx ends; it returns nil. With no timeout it returns
// at once.
func (w *Watchdog) Run(ctx context.Context) error {
	interval := w.Interval()
	if interval <= 0 {
		w.log.Info("Systemd watchdog is not enabled")
		return nil
	}
	w.log.Info("Starting systemd watchdog with interval", "interval", interval)
	for {
		w.tick(ctx)
		if !w.wait(ctx, interval) {
			return nil
		}
	}
}

// tick notifies systemd when the checks pass, trying Attempts times.
func (w *Watchdog) tick(ctx context.Context) {
	if err := Unhealthy(w.o.Checks); err != nil {
		w.log.Error("Do not notify watchdog this iteration as the kubelet is reportedly not healthy", "err", err)
		return
	}
	for attempt := 1; ; attempt++ {
		sent, err := w.o.Notifier.Notify(StateWatchdog)
		switch {
		case err == nil && sent:
			w.log.Debug("Watchdog plugin notified", "acknowledgment", sent, "state", StateWatchdog)
			return
		case err == nil:
			w.log.Error("Failed to notify watchdog", "err", ErrNotSupported)
			return
		}
		if attempt == Attempts {
			w.log.Error("Failed to notify watchdog", "err", err, "attempts", attempt)
			return
		}
		w.log.Debug("Failed to notify systemd watchdog, retrying", "err", err)
		if !w.wait(ctx, RetryPeriod) {
			return
		}
	}
}

// wait waits d on the clock; false when ctx ended first.
func (w *Watchdog) wait(ctx context.Context, d time.Duration) bool {
	t := w.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
