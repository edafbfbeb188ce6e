//go:build systemd && linux

package watchdog_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/watchdog"
)

// helperEnv makes TestSystemdWatchdogHelper the process of a unit:
// "healthy" or "stuck".
const helperEnv = "KK_WATCHDOG_HELPER"

// TestSystemdWatchdogHelper is the main process of TestSystemdWatchdog's
// units, this test binary run again: it feeds the unit's watchdog while
// its check passes, which in mode "stuck" it never does. Run on its own, it
// skips.
func TestSystemdWatchdogHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the main process of TestSystemdWatchdog's units")
	}
	timeout, err := watchdog.Enabled()
	require.NoError(t, err)
	require.NotZero(t, timeout, "no WatchdogSec= for this process")
	w, err := watchdog.New(watchdog.Options{Timeout: timeout, Checks: []watchdog.Check{{Name: "syncloop", Check: func() error {
		if mode == "healthy" {
			return nil
		}
		return errors.New("sync loop took longer than expected")
	}}}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test stops it sooner
	defer cancel()
	require.NoError(t, w.Run(ctx))
}

// TestSystemdWatchdog runs two transient services with WatchdogSec=2s
// under a real systemd (go test -tags systemd, as root, inside the
// namespaces of hack/systemd-start.sh's systemd: hack/systemd-test.sh),
// each this test binary feeding its watchdog through package watchdog: the
// healthy one outlives three timeouts; the one whose check fails is killed
// by systemd's watchdog (Result "watchdog").
func TestSystemdWatchdog(t *testing.T) {
	if _, err := os.Stat("/run/systemd/private"); err != nil {
		t.Fatalf("no systemd here (%v): run this test through hack/systemd-test.sh", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx := context.Background()
	conn, err := sddbus.NewSystemdConnectionContext(ctx)
	require.NoError(t, err)
	defer conn.Close()
	property := func(unit, unitType, name string) any {
		t.Helper()
		p, err := conn.GetUnitTypePropertyContext(ctx, unit, unitType, name)
		require.NoError(t, err, unit)
		return p.Value.Value()
	}
	start := func(mode string) string {
		unit := "kk-watchdog-" + mode + ".service"
		ch := make(chan string, 1)
		_, err := conn.StartTransientUnitContext(ctx, unit, "replace", []sddbus.Property{
			sddbus.PropDescription("kubeletkit watchdog test (" + mode + ")"),
			sddbus.PropType("simple"),
			// Not ordered after sysinit.target and friends: the private
			// systemd of hack/systemd-start.sh boots no such targets.
			{Name: "DefaultDependencies", Value: dbus.MakeVariant(false)},
			sddbus.PropExecStart([]string{exe, "-test.run=^TestSystemdWatchdogHelper$", "-test.count=1"}, false),
			{Name: "Environment", Value: dbus.MakeVariant([]string{helperEnv + "=" + mode})},
			{Name: "WatchdogUSec", Value: dbus.MakeVariant(uint64((2 * time.Second).Microseconds()))},
			{Name: "NotifyAccess", Value: dbus.MakeVariant("main")},
		}, ch)
		require.NoError(t, err, unit)
		require.Equal(t, "done", <-ch, unit)
		t.Cleanup(func() {
			stopped := make(chan string, 1)
			if _, err := conn.StopUnitContext(ctx, unit, "replace", stopped); err == nil {
				<-stopped
			}
			_ = conn.ResetFailedUnitContext(ctx, unit)
		})
		return unit
	}
	began := time.Now()
	healthy, stuck := start("healthy"), start("stuck")

	deadline := began.Add(30 * time.Second)
	for property(stuck, "Unit", "ActiveState") != "failed" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	require.Equal(t, "failed", property(stuck, "Unit", "ActiveState"), "the stuck service is killed")
	require.Equal(t, "watchdog", property(stuck, "Service", "Result"))

	// What must not happen cannot be waited for: three timeouts pass.
	time.Sleep(time.Until(began.Add(6 * time.Second)))
	require.Equal(t, "active", property(healthy, "Unit", "ActiveState"), "the fed service lives on")
	require.Equal(t, "success", property(healthy, "Service", "Result"))
}
