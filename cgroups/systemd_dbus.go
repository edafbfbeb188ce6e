package cgroups

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// SystemdConn is a Systemd over a D-Bus connection to a systemd manager,
// made with github.com/coreos/go-systemd. A call that finds the connection
// closed (systemd re-executed, say) dials again once, as upstream's
// libcontainer does. Safe for concurrent use.
type SystemdConn struct {
	dial func() (*sddbus.Conn, error)

	mu   sync.Mutex
	conn *sddbus.Conn // nil once closed
}

// DialSystemd connects to systemd: with socket "", as upstream's kubelet
// does (the system bus, or as root without one systemd's private socket
// /run/systemd/private); else to the private socket at that path
// (systemd's /run/systemd/private, seen from another mount namespace, say),
// authenticated as this process's user. The connection lives until Close,
// which ends it and its goroutines.
func DialSystemd(socket string) (*SystemdConn, error) {
	dial := func() (*sddbus.Conn, error) { return sddbus.NewWithContext(context.Background()) }
	if socket != "" {
		dial = func() (*sddbus.Conn, error) {
			return sddbus.NewConnection(func() (*dbus.Conn, error) {
				c, err := dbus.Dial("unix:path=" + socket)
				if err != nil {
					return nil, err
				}
				if err := c.Auth(nil); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			})
		}
	}
	conn, err := dial()
	if err != nil {
		return nil, fmt.Errorf("connect to systemd: %w", err)
	}
	return &SystemdConn{dial: dial, conn: conn}, nil
}

// Close ends the connection.
func (s *SystemdConn) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	return nil
}

var errConnClosed = errors.New("systemd connection closed")

// call runs f on the connection, dialing again once if it was lost.
func (s *SystemdConn) call(f func(*sddbus.Conn) error) error {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return errConnClosed
	}
	err := f(conn)
	if !errors.Is(err, dbus.ErrClosed) && (err == nil || conn.Connected()) {
		return mapDBusError(err)
	}
	s.mu.Lock()
	if s.conn == nil {
		s.mu.Unlock()
		return errConnClosed
	}
	if s.conn == conn {
		fresh, derr := s.dial()
		if derr != nil {
			s.mu.Unlock()
			return fmt.Errorf("%w (reconnecting: %w)", err, derr)
		}
		conn.Close()
		s.conn = fresh
	}
	conn = s.conn
	s.mu.Unlock()
	return mapDBusError(f(conn))
}

// mapDBusError wraps systemd's errors that the driver tells apart.
func mapDBusError(err error) error {
	var derr dbus.Error
	if err == nil || !errors.As(err, &derr) {
		return err
	}
	switch {
	case strings.HasSuffix(derr.Name, ".UnitExists"):
		return fmt.Errorf("%w: %w", ErrUnitExists, err)
	case strings.HasSuffix(derr.Name, ".NoSuchUnit"):
		return fmt.Errorf("%w: %w", ErrNoSuchUnit, err)
	}
	return err
}

func toDBus(props []SystemdProperty) []sddbus.Property {
	out := make([]sddbus.Property, len(props))
	for i, p := range props {
		out[i] = sddbus.Property{Name: p.Name, Value: dbus.MakeVariant(p.Value)}
	}
	return out
}

// wait waits for a job's result on ch.
func wait(ctx context.Context, ch <-chan string) (string, error) {
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the job: %w", ctx.Err())
	}
}

// StartTransientUnit implements Systemd.
func (s *SystemdConn) StartTransientUnit(ctx context.Context, name string, props []SystemdProperty) (string, error) {
	ch := make(chan string, 1)
	err := s.call(func(c *sddbus.Conn) error {
		_, err := c.StartTransientUnitContext(ctx, name, "replace", toDBus(props), ch)
		return err
	})
	if err != nil {
		return "", err
	}
	return wait(ctx, ch)
}

// SetUnitProperties implements Systemd.
func (s *SystemdConn) SetUnitProperties(ctx context.Context, name string, props []SystemdProperty) error {
	return s.call(func(c *sddbus.Conn) error {
		return c.SetUnitPropertiesContext(ctx, name, true, toDBus(props)...)
	})
}

// StopUnit implements Systemd.
func (s *SystemdConn) StopUnit(ctx context.Context, name string) (string, error) {
	ch := make(chan string, 1)
	err := s.call(func(c *sddbus.Conn) error {
		_, err := c.StopUnitContext(ctx, name, "replace", ch)
		return err
	})
	if err != nil {
		return "", err
	}
	return wait(ctx, ch)
}

// ResetFailedUnit implements Systemd.
func (s *SystemdConn) ResetFailedUnit(ctx context.Context, name string) error {
	return s.call(func(c *sddbus.Conn) error { return c.ResetFailedUnitContext(ctx, name) })
}

// Version implements Systemd: the leading number of the manager's Version
// property.
func (s *SystemdConn) Version(ctx context.Context) (int, error) {
	var v string
	err := s.call(func(c *sddbus.Conn) error {
		p, err := c.GetManagerProperty("Version")
		v = p
		return err
	})
	if err != nil {
		return 0, err
	}
	return ParseSystemdVersion(v)
}

// ParseSystemdVersion reads the number systemd's version starts with:
// 252 for "252.38-1~deb12u1", `"v245.4-1.fc32"` or "245".
func ParseSystemdVersion(v string) (int, error) {
	s := strings.TrimLeft(v, `"v`)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return 0, fmt.Errorf("systemd version %q: no leading number", v)
	}
	return n, nil
}
