//go:build dbus

package logind_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
)

// bus starts a private dbus-daemon (Debian's dbus-daemon package, part of
// the machine's systemd) and returns its address; it stops with the test.
func bus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address",
		"--address=unix:path="+filepath.Join(dir, "bus"))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "dbus-daemon")
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "dbus-daemon's address")
	return strings.TrimSpace(addr)
}

// connect connects to the bus at addr.
func connect(addr string) (*dbus.Conn, error) { return dbus.Connect(addr) }

// fakeLogind is logind and systemd on the private bus: Inhibit hands out
// a descriptor of a file of its own, InhibitDelayMaxUSec is a property,
// and systemd's KillUnit with SIGHUP makes logind read the drop-in.
type fakeLogind struct {
	t         *testing.T
	conn      *dbus.Conn
	props     *prop.Properties
	lockPath  string
	configDir string

	mu       sync.Mutex
	inhibits []string
	files    []*os.File // the lock files handed out, kept open here
	inhibit  chan struct{}
	reloaded bool
}

func newFakeLogind(t *testing.T, addr string, delay time.Duration) *fakeLogind {
	t.Helper()
	conn, err := connect(addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	for _, name := range []string{"org.freedesktop.login1", "org.freedesktop.systemd1"} {
		reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
		require.NoError(t, err)
		require.Equal(t, dbus.RequestNameReplyPrimaryOwner, reply)
	}
	f := &fakeLogind{t: t, conn: conn, lockPath: filepath.Join(t.TempDir(), "inhibit-lock"), configDir: t.TempDir(),
		inhibit: make(chan struct{}, 8)}
	require.NoError(t, os.WriteFile(f.lockPath, nil, 0o600))
	f.props, err = prop.Export(conn, "/org/freedesktop/login1", prop.Map{"org.freedesktop.login1.Manager": {
		"InhibitDelayMaxUSec": {Value: uint64(delay / time.Microsecond), Emit: prop.EmitFalse},
	}})
	require.NoError(t, err)
	require.NoError(t, conn.Export(loginManager{f}, "/org/freedesktop/login1", "org.freedesktop.login1.Manager"))
	require.NoError(t, conn.Export(systemdManager{f}, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"))
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, file := range f.files {
			file.Close()
		}
	})
	return f
}

type loginManager struct{ f *fakeLogind }

func (m loginManager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	f := m.f
	file, err := os.Open(f.lockPath)
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	fd := dbus.UnixFD(file.Fd())
	f.mu.Lock()
	f.inhibits = append(f.inhibits, strings.Join([]string{what, who, why, mode}, "|"))
	f.files = append(f.files, file)
	f.mu.Unlock()
	f.inhibit <- struct{}{}
	return fd, nil
}

type systemdManager struct{ f *fakeLogind }

func (m systemdManager) KillUnit(unit, who string, signal int32) *dbus.Error {
	f := m.f
	if unit != "systemd-logind.service" || who != "all" || signal != 1 {
		return dbus.MakeFailedError(errors.New("unexpected KillUnit"))
	}
	b, err := os.ReadFile(filepath.Join(f.configDir, "99-kubelet.conf"))
	if err != nil {
		return dbus.MakeFailedError(err)
	}
	var secs int
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "InhibitDelayMaxSec="); ok {
			for _, c := range v {
				secs = secs*10 + int(c-'0')
			}
		}
	}
	f.mu.Lock()
	f.reloaded = true
	f.mu.Unlock()
	f.props.SetMust("org.freedesktop.login1.Manager", "InhibitDelayMaxUSec", uint64(time.Duration(secs)*time.Second/time.Microsecond))
	return nil
}

// locksHeld counts the lock file's descriptors in this process beyond the
// fake's own: those the trigger holds.
func (f *fakeLogind) locksHeld() int {
	f.t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(f.t, err)
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == f.lockPath {
			n++
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return n - len(f.files)
}

// waitLocks waits until the trigger holds n locks.
func (f *fakeLogind) waitLocks(n int) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.locksHeld() != n {
		require.True(f.t, time.Now().Before(deadline), "the trigger holds %d locks, want %d", f.locksHeld(), n)
		time.Sleep(5 * time.Millisecond) // polling interval: no event says a descriptor was closed
	}
}

func (f *fakeLogind) prepareForShutdown(active bool) {
	f.t.Helper()
	require.NoError(f.t, f.conn.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForShutdown", active))
}

// handler records the trigger's calls; Shutdown checks that the lock is
// held while it runs.
type handler struct {
	f         *fakeLogind
	shutdowns chan int // the locks held during each Shutdown
	cancels   chan struct{}
}

func (h *handler) Shutdown(context.Context) error { h.shutdowns <- h.f.locksHeld(); return nil }
func (h *handler) Cancel()                        { h.cancels <- struct{}{} }

// A shutdown through logind: InhibitDelayMaxSec raised to the grace
// period, the lock held while the handler shuts the node down and released
// after, taken again when a shutdown is cancelled, released when Run ends.
func TestTriggerOnLogind(t *testing.T) {
	addr := bus(t)
	f := newFakeLogind(t, addr, 5*time.Second)
	trig, err := logind.New(logind.Options{GracePeriod: 30 * time.Second, ConfigDir: f.configDir,
		Dial: func() (*dbus.Conn, error) { return connect(addr) }})
	require.NoError(t, err)
	h := &handler{f: f, shutdowns: make(chan int, 4), cancels: make(chan struct{}, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- trig.Run(ctx, h) }()

	<-f.inhibit
	f.waitLocks(1)
	b, err := os.ReadFile(filepath.Join(f.configDir, "99-kubelet.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "[Login]\nInhibitDelayMaxSec=30\n")
	f.mu.Lock()
	assert.True(t, f.reloaded, "logind told to read its configuration again")
	assert.Equal(t, []string{"shutdown|kubeletkit|kubeletkit needs time to handle node shutdown|delay"}, f.inhibits)
	f.mu.Unlock()

	f.prepareForShutdown(true)
	assert.Equal(t, 1, <-h.shutdowns, "the lock is held while the node shuts down")
	f.waitLocks(0)

	f.prepareForShutdown(false)
	<-h.cancels
	<-f.inhibit
	f.waitLocks(1)

	cancel()
	require.NoError(t, <-done)
	f.waitLocks(0)
	assert.Empty(t, h.shutdowns)
}

// A bus without logind: the trigger gives up at once, as upstream's
// kubelet goes on without graceful shutdown.
func TestTriggerOnABusWithoutLogind(t *testing.T) {
	addr := bus(t)
	trig, err := logind.New(logind.Options{GracePeriod: 30 * time.Second, Dial: func() (*dbus.Conn, error) { return connect(addr) }})
	require.NoError(t, err)
	require.NoError(t, trig.Run(context.Background(), &handler{}))
}
