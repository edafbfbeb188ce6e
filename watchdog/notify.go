package watchdog

import (
	"fmt"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

const (
	// StateWatchdog is the notification that feeds the watchdog.
	StateWatchdog = daemon.SdNotifyWatchdog
	// StateReady tells systemd the service has started (Type=notify
	// units wait for it).
	StateReady = daemon.SdNotifyReady
)

// Notifier sends a state ("WATCHDOG=1") to the service manager. sent is
// false, with a nil error, when there is no service manager to tell.
type Notifier interface {
	Notify(state string) (sent bool, err error)
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(state string) (bool, error)

// Notify calls f.
func (f NotifierFunc) Notify(state string) (bool, error) { return f(state) }

var (
	_ Notifier = NotifierFunc(nil)
	_ Notifier = Systemd{}
)

// Systemd is the real Notifier: sd_notify(3) through go-systemd, a
// datagram to the unix socket named in NOTIFY_SOCKET (left set, as
// upstream leaves it); not sent when it is unset.
type Systemd struct{}

// Notify sends state to NOTIFY_SOCKET.
func (Systemd) Notify(state string) (bool, error) { return daemon.SdNotify(false, state) }

// Enabled returns the watchdog timeout systemd gave this process
// (WATCHDOG_USEC, when WATCHDOG_PID is unset or this process's), zero when
// none, and an error, "configure watchdog: ...", when the variables are
// malformed. It leaves them set, as upstream.
func Enabled() (time.Duration, error) {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, fmt.Errorf("configure watchdog: %w", err)
	}
	return d, nil
}
