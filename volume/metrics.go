package volume

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Operation names, as upstream's storage_operation_duration_seconds labels
// them (operation_name).
const (
	// OpVerifyAttached is the check, before a volume's first set up, that
	// it is attached to the node: here, that it needs no attaching (every
	// volume but a CSI persistent volume whose driver requires it, which
	// fails ErrNotAttached and is not observed, as upstream observes no
	// check of a volume missing from the node's status).
	OpVerifyAttached = "verify_controller_attached_volume"
	// OpMount is a volume's set up for a pod (a CSI persistent volume's
	// staging included, as upstream's volume_mount mounts the device),
	// and every later refresh of a configMap, secret, downwardAPI or
	// projected volume.
	OpMount = "volume_mount"
	// OpUnmount is a volume's tear down for a pod, its subPaths' cleaning
	// included.
	OpUnmount = "volume_unmount"
	// OpUnmountDevice is the unstaging of a CSI volume after the last pod
	// that used it (NodeUnstageVolume and the removal of the global mount
	// directory).
	OpUnmountDevice = "unmount_device"
)

// Metrics receives the manager's operations as upstream's
// storage_operation_duration_seconds observes them. The calls come from
// the operations' goroutines, concurrently: an implementation must be safe
// for concurrent use and must not block.
type Metrics interface {
	// ObserveOperation reports one operation: op is one of the Op names,
	// plugin the volume's qualified plugin name (QualifiedPluginName), d
	// how long it took on the manager's clock, err its error (nil: it
	// succeeded). An operation cut short by the end of Run's context is
	// not reported.
	ObserveOperation(op, plugin string, d time.Duration, err error)
}

// MetricsFunc adapts a function to Metrics.
type MetricsFunc func(op, plugin string, d time.Duration, err error)

var _ Metrics = MetricsFunc(nil)

// ObserveOperation implements Metrics.
func (f MetricsFunc) ObserveOperation(op, plugin string, d time.Duration, err error) {
	f(op, plugin, d, err)
}

// QualifiedPluginName is the plugin name upstream labels a volume's
// metrics with: the plugin's name, followed by ":<driver>" for a CSI
// volume, inline (spec.csi) or persistent (pv.spec.csi), e.g.
// "kubernetes.io/csi:csi.example.com". spec and pv may be nil.
func QualifiedPluginName(plugin string, spec *v1.Volume, pv *v1.PersistentVolume) string {
	switch {
	case spec != nil && spec.CSI != nil:
		return plugin + ":" + spec.CSI.Driver
	case pv != nil && pv.Spec.CSI != nil:
		return plugin + ":" + pv.Spec.CSI.Driver
	}
	return plugin
}

// VolumeCount is how many volumes of one plugin the manager holds, as
// upstream's volume_manager_total_volumes counts them: one per pod and
// volume.
type VolumeCount struct {
	// Plugin is the qualified plugin name (QualifiedPluginName).
	Plugin string
	// Desired counts the volumes of the desired pods that a plugin
	// supports (upstream's desired state of world): a volume that cannot
	// be processed is not counted.
	Desired int
	// Actual counts the volumes set up and usable by their pod's
	// containers (upstream's actual state of world, its mounted volumes):
	// not one whose set up has not yet succeeded, nor one found on disk
	// after a restart until its pod adopts it.
	Actual int
}

// VolumeCounts counts the volumes of the desired and actual states by
// qualified plugin name, sorted by it; a plugin with neither is absent.
// It is cheap (no I/O), meant to be called at every scrape.
func (m *Manager) VolumeCounts() []VolumeCount {
	m.mu.Lock()
	desired, actual := m.core.counts()
	m.mu.Unlock()
	names := make([]string, 0, len(desired)+len(actual))
	for n := range desired {
		names = append(names, n)
	}
	for n := range actual {
		if _, ok := desired[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]VolumeCount, len(names))
	for i, n := range names {
		out[i] = VolumeCount{Plugin: n, Desired: desired[n], Actual: actual[n]}
	}
	return out
}

// observe reports an operation to Options.Metrics, unless there is none or
// ctx ended (the operation was cut short).
func (m *Manager) observe(ctxErr error, op, plugin string, start time.Time, err error) {
	if m.opts.Metrics == nil || ctxErr != nil {
		return
	}
	m.opts.Metrics.ObserveOperation(op, plugin, m.clock.Since(start), err)
}

// reconstructedName is the qualified plugin name of a volume found on disk
// in dir: a CSI volume's driver is read from its vol_data.json (the plain
// plugin name when it cannot be).
func reconstructedName(plugin Plugin, dir string) string {
	name := plugin.Name()
	if _, ok := plugin.(*csiPlugin); !ok {
		return name
	}
	b, err := os.ReadFile(filepath.Join(dir, csiDataFile))
	if err != nil {
		return name
	}
	var d csiVolumeData
	if json.Unmarshal(b, &d) != nil || d.Driver == "" {
		return name
	}
	return name + ":" + d.Driver
}

// observeSetUp reports a set up that began at start: its attachment
// check when it is the volume's first (the time from the plan to the
// plugin's call; nothing is asked of anyone), then the set up itself. A
// volume that needs attaching (ErrNotAttached) reports neither, as
// upstream reports nothing for a volume that is not in the node's status.
func (m *Manager) observeSetUp(ctx context.Context, op operation, start time.Time, err error) {
	if m.opts.Metrics == nil || errors.Is(err, ErrNotAttached) {
		return
	}
	if op.verify {
		m.observe(ctx.Err(), OpVerifyAttached, op.metric, op.started, nil)
	}
	m.observe(ctx.Err(), OpMount, op.metric, start, err)
}

// deviceOp starts timing a device operation (OpUnmountDevice) of a
// plugin inside its TearDown and returns its end, which reports it with
// its error; the built-in CSI plugin calls it around NodeUnstageVolume.
// Without Metrics it does nothing.
func (m *Manager) deviceOp(ctx context.Context, plugin string) func(error) {
	if m.opts.Metrics == nil {
		return func(error) {}
	}
	start := m.clock.Now()
	return func(err error) { m.observe(ctx.Err(), OpUnmountDevice, plugin, start, err) }
}
