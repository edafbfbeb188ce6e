package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"time"
)

// SystemdProperty is one property of a systemd unit as the D-Bus API takes
// it: its name and a value of the D-Bus type systemd expects (uint64 for
// CPUShares, MemoryLimit, TasksMax and the ...USec times, bool for the
// accounting switches, []string for Wants, string for Description).
type SystemdProperty struct {
	Name  string
	Value any
}

// Systemd is the part of systemd's D-Bus API (the
// org.freedesktop.systemd1.Manager object) the systemd driver uses. Every
// job runs in mode "replace". SystemdConn is the real one; a fake stands for
// it in tests.
type Systemd interface {
	// StartTransientUnit creates and starts a transient unit with props
	// and waits for its job; it returns the job's result, "done" when it
	// succeeded. A unit of that name that exists already is an error
	// wrapping ErrUnitExists.
	StartTransientUnit(ctx context.Context, name string, props []SystemdProperty) (string, error)
	// SetUnitProperties sets properties of a unit at runtime (not
	// persisted).
	SetUnitProperties(ctx context.Context, name string, props []SystemdProperty) error
	// StopUnit stops a unit and waits for its job; it returns the job's
	// result. A unit systemd does not know is an error wrapping
	// ErrNoSuchUnit.
	StopUnit(ctx context.Context, name string) (string, error)
	// ResetFailedUnit forgets a unit's failed state, so that systemd
	// unloads it.
	ResetFailedUnit(ctx context.Context, name string) error
	// Version is systemd's version number (252 for "252.38-1~deb12u1").
	Version(ctx context.Context) (int, error)
}

// Errors of a Systemd, for errors.Is.
var (
	// ErrUnitExists: StartTransientUnit found a unit of that name
	// (systemd's org.freedesktop.systemd1.UnitExists).
	ErrUnitExists = errors.New("unit exists")
	// ErrNoSuchUnit: systemd does not know the unit
	// (org.freedesktop.systemd1.NoSuchUnit).
	ErrNoSuchUnit = errors.New("no such unit")
)

// unitTimeout bounds each job the driver waits for, as upstream's
// libcontainer does (30s).
const unitTimeout = 30 * time.Second

// unitName is the slice unit of a cgroup: the last element of its systemd
// path ("-.slice" for the root).
func unitName(n Name) string {
	if len(n) == 0 {
		return "-.slice"
	}
	return path.Base(n.Systemd())
}

// startProperties are the properties a pod or QoS slice is created with, as
// upstream's kubelet creates it through libcontainer: a description, its
// parent slice in Wants (a slice's parent is implied by its name; Wants
// keeps the parent started), accounting on for the controllers the kubelet
// limits, and no default dependencies. A slice gets no Delegate: upstream
// asks for it only on scopes.
func startProperties(n Name, v2 bool) []SystemdProperty {
	io := "BlockIOAccounting"
	if v2 {
		io = "IOAccounting"
	}
	return []SystemdProperty{
		{"Description", "libcontainer container " + unitName(n)},
		{"Wants", []string{unitName(n[:len(n)-1])}},
		{"MemoryAccounting", true},
		{"CPUAccounting", true},
		{io, true},
		{"TasksAccounting", true},
		{"DefaultDependencies", false},
	}
}

// resourceProperties are rc as systemd unit properties, as upstream's
// libcontainer converts a kubelet's resources: on cgroup v1 CPUShares and
// MemoryLimit, on v2 CPUWeight and MemoryMax; the CFS quota as
// CPUQuotaPerSecUSec (rounded up to 10ms, "infinity" for no quota) and its
// period as CPUQuotaPeriodUSec (systemd 242 and later); the pids limit as
// TasksMax. What rc leaves nil or zero is left out; huge pages have no
// property and are written to the cgroup only.
func resourceProperties(rc ResourceConfig, v2 bool, version int) []SystemdProperty {
	var props []SystemdProperty
	if rc.Memory != nil && *rc.Memory != 0 {
		name := "MemoryLimit"
		if v2 {
			name = "MemoryMax"
		}
		props = append(props, SystemdProperty{name, uint64(*rc.Memory)})
	}
	if rc.CPUShares != nil && *rc.CPUShares != 0 {
		if v2 {
			props = append(props, SystemdProperty{"CPUWeight", SharesToWeight(*rc.CPUShares)})
		} else {
			props = append(props, SystemdProperty{"CPUShares", *rc.CPUShares})
		}
	}
	var quota int64
	var period uint64
	if rc.CPUQuota != nil {
		quota = *rc.CPUQuota
	}
	if rc.CPUPeriod != nil {
		period = *rc.CPUPeriod
	}
	if period != 0 && version >= 242 {
		props = append(props, SystemdProperty{"CPUQuotaPeriodUSec", period})
	}
	if quota != 0 || period != 0 {
		perSec := uint64(math.MaxUint64) // systemd's "infinity"
		if quota > 0 {
			p := period
			if p == 0 {
				p = QuotaPeriod
			}
			// systemd keeps the quota as a percentage of a CPU: round up
			// to the next 10ms a second, so that a child may still have
			// the quota it was given.
			perSec = uint64(quota) * 1000000 / p
			if perSec%10000 != 0 {
				perSec = (perSec/10000 + 1) * 10000
			}
		}
		props = append(props, SystemdProperty{"CPUQuotaPerSecUSec", perSec})
	}
	if rc.PidsLimit != nil && (*rc.PidsLimit > 0 || *rc.PidsLimit == -1) {
		props = append(props, SystemdProperty{"TasksMax", uint64(*rc.PidsLimit)})
	}
	return props
}

// systemdDriver creates and removes cgroups as systemd slices over D-Bus,
// as upstream's systemd driver does through libcontainer: the slice unit
// is started (transient), the directories systemd does not make (the v1
// hierarchies it does not manage, the v2 controllers' enabling) are made,
// the resources are set as unit properties and then written to the
// cgroup's files; removal kills what is left in it, stops the unit and
// removes any directory left.
type systemdDriver struct {
	fs      *fsDriver
	sd      Systemd
	version int // systemd's
	log     *slog.Logger
}

func (d *systemdDriver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), unitTimeout)
}

// create starts the slice unit, or finds it started (upstream ignores an
// existing unit when it creates a cgroup), then sets rc.
func (d *systemdDriver) create(n Name, rc ResourceConfig) error {
	unit := unitName(n)
	ctx, cancel := d.ctx()
	defer cancel()
	result, err := d.sd.StartTransientUnit(ctx, unit, startProperties(n, d.fs.v2))
	switch {
	case errors.Is(err, ErrUnitExists):
	case err != nil:
		return fmt.Errorf("create systemd unit %s: %w", unit, err)
	case result != "done":
		_ = d.sd.ResetFailedUnit(ctx, unit)
		return fmt.Errorf("create systemd unit %s: job %s", unit, result)
	}
	if err := d.fs.mkdirs(n); err != nil {
		return err
	}
	return d.set(n, rc)
}

// set sets rc as unit properties, then writes it to the cgroup's files,
// as upstream does (systemd may not know every setting, nor apply it to
// every hierarchy).
func (d *systemdDriver) set(n Name, rc ResourceConfig) error {
	if props := resourceProperties(rc, d.fs.v2, d.version); len(props) > 0 {
		ctx, cancel := d.ctx()
		defer cancel()
		if err := d.sd.SetUnitProperties(ctx, unitName(n), props); err != nil {
			return fmt.Errorf("set systemd unit %s: %w", unitName(n), err)
		}
	}
	return d.fs.set(n, rc)
}

// destroy kills the processes left in the cgroup, stops its unit (one
// systemd does not know is gone already), resets it should it have
// failed, and removes the directories left.
func (d *systemdDriver) destroy(n Name) error {
	if err := d.fs.killAll(n); err != nil {
		return err
	}
	unit := unitName(n)
	ctx, cancel := d.ctx()
	defer cancel()
	result, err := d.sd.StopUnit(ctx, unit)
	if err != nil && !errors.Is(err, ErrNoSuchUnit) {
		return fmt.Errorf("stop systemd unit %s: %w", unit, err)
	}
	if err == nil && result != "done" {
		// As upstream: noted, the unit reset and the directories removed.
		d.log.Info("Stopping a systemd unit did not complete", "unit", unit, "result", result)
	}
	_ = d.sd.ResetFailedUnit(ctx, unit)
	return d.fs.removeAll(n)
}
