package logind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
)

// logind's and systemd's D-Bus names (org.freedesktop.login1(5)).
const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	systemdService  = "org.freedesktop.systemd1"
	systemdObject   = dbus.ObjectPath("/org/freedesktop/systemd1")
)

// Upstream's defaults.
const (
	// DefaultConfigDir is where the drop-in that raises logind's
	// InhibitDelayMaxSec goes, DefaultConfigFile its name (upstream's
	// 99-kubelet.conf).
	DefaultConfigDir  = "/etc/systemd/logind.conf.d"
	DefaultConfigFile = "99-kubelet.conf"
	// ReconnectPeriod is how long the trigger waits before it watches
	// again after the bus went away (upstream's 1s).
	ReconnectPeriod = time.Second
)

// Options configure a Trigger.
type Options struct {
	// GracePeriod is how long the node needs to shut down (the shutdown
	// manager's budget, nodeshutdown.Manager.GracePeriod): logind's
	// InhibitDelayMaxSec is raised to it when it is shorter. Required.
	GracePeriod time.Duration
	// Dial connects to the system bus. Nil means the system bus
	// (DBUS_SYSTEM_BUS_ADDRESS, or /var/run/dbus/system_bus_socket).
	Dial func() (*dbus.Conn, error)
	// ConfigDir is where the drop-in raising InhibitDelayMaxSec is
	// written. Empty means DefaultConfigDir.
	ConfigDir string
	// Clock times reconnections. Nil means the real clock.
	Clock clock.Clock
	// Logger receives logs. Nil means discard.
	Logger *slog.Logger
}

// Trigger is a nodeshutdown.Trigger on systemd-logind, as upstream's
// kubelet: it holds a delay inhibitor lock on shutdown, calls
// Handler.Shutdown on PrepareForShutdown(true) and releases the lock when
// that returns (the machine then goes on), and on PrepareForShutdown(false)
// calls Handler.Cancel and takes the lock again.
type Trigger struct {
	o   Options
	log *slog.Logger
}

var _ nodeshutdown.Trigger = (*Trigger)(nil)

// New validates opts and returns a Trigger; it connects to nothing.
func New(opts Options) (*Trigger, error) {
	if opts.GracePeriod <= 0 {
		return nil, errors.New("logind trigger: GracePeriod must be positive")
	}
	if opts.Dial == nil {
		opts.Dial = func() (*dbus.Conn, error) { return dbus.ConnectSystemBus() }
	}
	if opts.ConfigDir == "" {
		opts.ConfigDir = DefaultConfigDir
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	t := &Trigger{o: opts, log: opts.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	return t, nil
}

// Run watches logind until ctx ends. When the first watch cannot start (no
// system bus, no logind, a delay it cannot raise) it logs why and returns
// nil, as upstream's kubelet goes on without graceful shutdown; when the
// bus goes away later it watches again after ReconnectPeriod.
func (t *Trigger) Run(ctx context.Context, h nodeshutdown.Handler) error {
	w, err := t.start()
	if err != nil {
		t.log.Error("Unable to watch the node for shutdown events; node shutdown will not be graceful", "err", err)
		return nil
	}
	for {
		w.serve(ctx, h)
		w.close()
		if ctx.Err() != nil {
			return nil
		}
		for {
			timer := t.o.Clock.NewTimer(ReconnectPeriod)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C():
			}
			t.log.Info("Restarting watch for node shutdown events")
			if w, err = t.start(); err == nil {
				break
			}
			t.log.Error("Unable to watch the node for shutdown events", "err", err)
		}
	}
}

// watch is one connection to logind with the lock it holds.
type watch struct {
	t       *Trigger
	conn    *dbus.Conn
	signals chan *dbus.Signal
	lock    int // the inhibitor's file descriptor; -1 when none
}

// start connects, raises InhibitDelayMaxSec if needed, subscribes to
// PrepareForShutdown and takes the lock.
func (t *Trigger) start() (*watch, error) {
	conn, err := t.o.Dial()
	if err != nil {
		return nil, fmt.Errorf("connect to the system bus: %w", err)
	}
	w := &watch{t: t, conn: conn, lock: -1}
	if err := w.ensureDelay(); err != nil {
		w.close()
		return nil, err
	}
	// Subscribed before the lock is taken, so that no PrepareForShutdown
	// the lock delays goes unseen.
	if err := conn.AddMatchSignal(dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindObject)); err != nil {
		w.close()
		return nil, fmt.Errorf("subscribe to PrepareForShutdown: %w", err)
	}
	w.signals = make(chan *dbus.Signal, 8)
	conn.Signal(w.signals)
	if err := w.inhibit(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// delay reads logind's InhibitDelayMaxUSec.
func (w *watch) delay() (time.Duration, error) {
	v, err := w.conn.Object(logindService, logindObject).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("read logind's InhibitDelayMaxUSec: %w", err)
	}
	us, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is a %s, not a uint64", v.Signature())
	}
	return time.Duration(us) * time.Microsecond, nil
}

// ensureDelay raises InhibitDelayMaxSec to the grace period, as upstream:
// a drop-in in ConfigDir, then SIGHUP to logind through systemd, then the
// property read again (a few times, logind reloads asynchronously).
func (w *watch) ensureDelay() error {
	cur, err := w.delay()
	if err != nil {
		return err
	}
	want := w.t.o.GracePeriod
	if cur >= want {
		return nil
	}
	if err := os.MkdirAll(w.t.o.ConfigDir, 0o755); err != nil {
		return fmt.Errorf("raise logind's InhibitDelayMaxSec: %w", err)
	}
	conf := fmt.Sprintf("# Written by kubeletkit's node shutdown (nodeshutdown/logind).\n[Login]\nInhibitDelayMaxSec=%.0f\n", want.Seconds())
	if err := os.WriteFile(filepath.Join(w.t.o.ConfigDir, DefaultConfigFile), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("raise logind's InhibitDelayMaxSec: %w", err)
	}
	call := w.conn.Object(systemdService, systemdObject).Call("org.freedesktop.systemd1.Manager.KillUnit", 0,
		"systemd-logind.service", "all", int32(syscall.SIGHUP))
	if call.Err != nil {
		return fmt.Errorf("reload logind's configuration: %w", call.Err)
	}
	wait := 100 * time.Millisecond
	for range 5 {
		if cur, err = w.delay(); err != nil {
			return err
		}
		if cur >= want {
			return nil
		}
		<-w.t.o.Clock.After(wait)
		wait *= 2
	}
	return fmt.Errorf("logind's InhibitDelayMaxSec is %s, less than the shutdown's grace period %s, and could not be raised", cur, want)
}

// inhibit takes a delay inhibitor lock on shutdown, releasing the one it
// held.
func (w *watch) inhibit() error {
	var fd dbus.UnixFD
	call := w.conn.Object(logindService, logindObject).Call(logindInterface+".Inhibit", 0,
		"shutdown", "kubeletkit", "kubeletkit needs time to handle node shutdown", "delay")
	if call.Err != nil {
		return fmt.Errorf("take logind's inhibitor lock: %w", call.Err)
	}
	if err := call.Store(&fd); err != nil {
		return fmt.Errorf("take logind's inhibitor lock: %w", err)
	}
	w.release()
	w.lock = int(fd)
	return nil
}

// release closes the inhibitor lock, if held: logind goes on shutting down.
func (w *watch) release() {
	if w.lock >= 0 {
		if err := syscall.Close(w.lock); err != nil {
			w.t.log.Error("Release logind's inhibitor lock", "err", err)
		}
		w.lock = -1
	}
}

// serve handles PrepareForShutdown until ctx ends or the bus goes away.
func (w *watch) serve(ctx context.Context, h nodeshutdown.Handler) {
	for {
		var sig *dbus.Signal
		var ok bool
		select {
		case <-ctx.Done():
			return
		case sig, ok = <-w.signals:
			if !ok {
				w.t.log.Error("The system bus went away; no more shutdown events")
				return
			}
		}
		if sig == nil || sig.Name != logindInterface+".PrepareForShutdown" || len(sig.Body) == 0 {
			continue
		}
		active, isBool := sig.Body[0].(bool)
		if !isBool {
			w.t.log.Error("PrepareForShutdown's argument is not a boolean", "body", sig.Body)
			continue
		}
		if active {
			w.t.log.Info("logind: the machine is shutting down")
			if err := h.Shutdown(ctx); err != nil && ctx.Err() == nil {
				w.t.log.Error("Node shutdown", "err", err)
			}
			w.release()
			w.t.log.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
			continue
		}
		w.t.log.Info("logind: the shutdown was cancelled")
		h.Cancel()
		if err := w.inhibit(); err != nil {
			w.t.log.Error("Take the inhibitor lock again", "err", err)
		}
	}
}

// close releases the lock and the connection.
func (w *watch) close() {
	w.release()
	if w.signals != nil {
		w.conn.RemoveSignal(w.signals)
	}
	_ = w.conn.Close()
}
