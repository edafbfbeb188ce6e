package dra

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

// HealthRetryPeriod is how long the node waits before it opens a plugin's
// health stream again once the last one ended or could not be opened
// (upstream's 5 seconds).
const HealthRetryPeriod = 5 * time.Second

// healthCache is the Manager's record of the devices' health, kept in
// HealthFile, and of the pods whose status is due again since a device
// they use changed.
type healthCache struct {
	mu      sync.Mutex
	loaded  bool
	health  Health
	changed map[types.UID]struct{}
}

// withHealth runs f with the health locked, after reading HealthFile the
// first time; a file that cannot be read is logged and the health starts
// empty, as upstream's.
func (m *Manager) withHealth(f func(Health)) {
	m.health.mu.Lock()
	defer m.health.mu.Unlock()
	if !m.health.loaded {
		m.health.loaded = true
		m.health.health = Health{}
		if err := m.loadHealth(); err != nil {
			m.log.Error("Failed to read the devices' health, starting without it", "file", m.healthPath(), "err", err)
			m.health.health = Health{}
		}
	}
	f(m.health.health)
}

func (m *Manager) healthPath() string {
	if m.stateDir == "" {
		return ""
	}
	return filepath.Join(m.stateDir, HealthFile)
}

func (m *Manager) loadHealth() error {
	path := m.healthPath()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &m.health.health)
}

// saveHealth writes the health to HealthFile (health locked); a failure
// is logged, as upstream's: a restart then forgets the latest reports.
func (m *Manager) saveHealth() {
	path := m.healthPath()
	if path == "" {
		return
	}
	err := os.MkdirAll(m.stateDir, 0o750)
	if err == nil {
		err = atomicfile.WriteJSON(path, m.health.health)
	}
	if err != nil {
		m.log.Error("Failed to write the devices' health: a restart may forget it", "file", path, "err", err)
	}
}

// watchHealth reads the health stream of driver's plugin until it ends,
// taking each report into the health (Health.Merge) and noting the pods
// that use a device whose health changed (TakeHealthChanges). When the
// stream ends, for any reason, the driver's devices are forgotten, so that
// their health is Unknown, as upstream's.
func (m *Manager) watchHealth(ctx context.Context, driver string, stream drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesClient) error {
	defer m.withHealth(func(h Health) {
		delete(h, driver)
		m.saveHealth()
	})
	for {
		resp, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		report := make([]DeviceHealth, 0, len(resp.GetDevices()))
		for _, d := range resp.GetDevices() {
			report = append(report, healthFromReport(d))
		}
		var changed []DeviceHealth
		m.withHealth(func(h Health) {
			if changed = h.Merge(driver, report, m.clock.Now()); len(changed) > 0 {
				m.saveHealth()
			}
		})
		if len(changed) > 0 {
			m.noteHealthChanges(driver, changed)
		}
	}
}

// noteHealthChanges marks as due the pods that use one of the changed
// devices of driver.
func (m *Manager) noteHealthChanges(driver string, changed []DeviceHealth) {
	var pods []string
	_ = m.withCache(func() error {
		for _, info := range m.cache {
			for _, d := range info.DriverState[driver].Devices {
				if slices.ContainsFunc(changed, func(c DeviceHealth) bool { return c.PoolName == d.PoolName && c.DeviceName == d.DeviceName }) {
					pods = slices.AppendSeq(pods, maps.Keys(info.PodUIDs))
					break
				}
			}
		}
		return nil
	})
	if len(pods) == 0 {
		return
	}
	m.health.mu.Lock()
	defer m.health.mu.Unlock()
	for _, uid := range pods {
		m.health.changed[types.UID(uid)] = struct{}{}
	}
	m.log.Info("Device health changed, the statuses of the pods using them are due", "driver", driver, "pods", len(pods))
}

// TakeHealthChanges returns, once, the pods that use a DRA device whose
// health changed: their statuses are due again (upstream syncs them), so
// that UpdateAllocatedResourcesStatus shows the new health. Sorted.
func (m *Manager) TakeHealthChanges() []types.UID {
	m.health.mu.Lock()
	defer m.health.mu.Unlock()
	if len(m.health.changed) == 0 {
		return nil
	}
	out := slices.Sorted(maps.Keys(m.health.changed))
	clear(m.health.changed)
	return out
}

// UpdateAllocatedResourcesStatus sets, in each status of st of a
// container that uses resource claims, the health of the devices its
// claims were prepared with (allocatedResourcesStatus; upstream's
// ResourceHealthStatus, and ResourceHealthStatusMessage for the message,
// both beta and on since 1.36): an entry "claim:<pod claim>" or
// "claim:<pod claim>/<request>" per item of resources.claims, each device
// by its first CDI device ID (else "<driver>/<pool>/<device>") and its
// health as its plugin last reported it, Unknown when it has not or the
// report no longer holds (DefaultHealthTimeout, or the plugin's timeout).
// Entries of device plugins' resources are kept; call it after
// devices.Manager's, as upstream does.
func (m *Manager) UpdateAllocatedResourcesStatus(pod *v1.Pod, st *v1.PodStatus) {
	now := m.clock.Now()
	_ = m.withCache(func() error {
		lookup := func(name string) (ClaimState, bool) {
			info := m.cache[key(pod.Namespace, name)]
			if info == nil {
				return ClaimState{}, false
			}
			return info.ClaimState, true
		}
		m.withHealth(func(h Health) {
			setClaimsHealth(pod, st, lookup, func(driver, pool, device string) DeviceHealth { return h.At(driver, pool, device, now) })
		})
		return nil
	})
}

// Health is the health the Manager knows, as HealthFile holds it: for
// tests and for inspection.
func (m *Manager) Health() Health {
	out := Health{}
	m.withHealth(func(h Health) {
		for driver, dh := range h {
			out[driver] = DriverHealth{Devices: maps.Clone(dh.Devices)}
		}
	})
	return out
}

// watchPlugin opens the plugin's health stream (v1alpha1
// DRAResourceHealth, NodeWatchResources) and hands it to the Registry's
// watch function, again HealthRetryPeriod after each end or failure, until
// ctx ends, as upstream's DRA plugin manager does for each plugin.
func (r *Registry) watchPlugin(ctx context.Context, p *plugin) {
	client := drahealthv1alpha1.NewDRAResourceHealthClient(p.conn)
	for {
		stream, err := client.NodeWatchResources(ctx, &drahealthv1alpha1.NodeWatchResourcesRequest{})
		if err == nil {
			err = r.watch(ctx, p.driver, stream)
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Debug("The health stream of a DRA plugin ended, will open it again", "driver", p.driver, "endpoint", p.endpoint, "err", err)
		t := r.clock.NewTimer(HealthRetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}
