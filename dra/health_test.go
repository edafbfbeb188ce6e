package dra_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func dev(name string, h dra.HealthStatus, at time.Time) dra.DeviceHealth {
	return dra.DeviceHealth{PoolName: "node1", DeviceName: name, Health: h, LastUpdated: at, HealthCheckTimeout: dra.DefaultHealthTimeout}
}

// A plugin's report merged into the node's health, as upstream's health
// cache does (healthinfo.go updateHealthInfo).
func TestHealthMerge(t *testing.T) {
	now := t0.Add(time.Minute)
	withMsg := func(d dra.DeviceHealth, m string) dra.DeviceHealth { d.Message = m; return d }
	withTimeout := func(d dra.DeviceHealth, t time.Duration) dra.DeviceHealth { d.HealthCheckTimeout = t; return d }
	for _, tc := range []struct {
		name              string
		before            []dra.DeviceHealth
		report            []dra.DeviceHealth
		wantChanged, want []dra.DeviceHealth
	}{
		{"a new device: changed, as of now", nil, []dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, t0)},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now)}, []dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now)}},
		{"the same again: not changed, but renewed",
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, t0)}, []dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, t0)},
			nil, []dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now)}},
		{"another health, message or timeout: changed",
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, t0), dev("gpu-1", dra.HealthUnhealthy, t0), dev("gpu-2", dra.HealthHealthy, t0)},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthUnhealthy, t0), withMsg(dev("gpu-1", dra.HealthUnhealthy, t0), "ECC errors"), withTimeout(dev("gpu-2", dra.HealthHealthy, t0), time.Hour)},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthUnhealthy, now), withMsg(dev("gpu-1", dra.HealthUnhealthy, now), "ECC errors"), withTimeout(dev("gpu-2", dra.HealthHealthy, now), time.Hour)},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthUnhealthy, now), withMsg(dev("gpu-1", dra.HealthUnhealthy, now), "ECC errors"), withTimeout(dev("gpu-2", dra.HealthHealthy, now), time.Hour)}},
		{"a device left out whose report no longer holds: unknown, no message",
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now), withMsg(dev("gpu-1", dra.HealthUnhealthy, t0), "ECC errors")},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now)},
			[]dra.DeviceHealth{dev("gpu-1", dra.HealthUnknown, now)},
			[]dra.DeviceHealth{dev("gpu-0", dra.HealthHealthy, now), dev("gpu-1", dra.HealthUnknown, now)}},
		{"a device left out whose report holds, or unknown already: kept",
			[]dra.DeviceHealth{withTimeout(dev("gpu-0", dra.HealthHealthy, t0), 2*time.Minute), dev("gpu-1", dra.HealthUnknown, t0)},
			nil, nil,
			[]dra.DeviceHealth{withTimeout(dev("gpu-0", dra.HealthHealthy, t0), 2*time.Minute), dev("gpu-1", dra.HealthUnknown, t0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := dra.Health{"other.example.com": {Devices: map[string]dra.DeviceHealth{"node1/x": dev("x", dra.HealthHealthy, t0)}}}
			if tc.before != nil {
				h["gpu.example.com"] = dra.DriverHealth{Devices: map[string]dra.DeviceHealth{}}
				for _, d := range tc.before {
					h["gpu.example.com"].Devices["node1/"+d.DeviceName] = d
				}
			}
			assert.Equal(t, tc.wantChanged, h.Merge("gpu.example.com", tc.report, now))
			var got []dra.DeviceHealth
			for _, d := range tc.want {
				got = append(got, h["gpu.example.com"].Devices["node1/"+d.DeviceName])
			}
			assert.Equal(t, tc.want, got)
			assert.Len(t, h["gpu.example.com"].Devices, len(tc.want))
			assert.Equal(t, dev("x", dra.HealthHealthy, t0), h["other.example.com"].Devices["node1/x"], "another driver's devices are left alone")
		})
	}
}

// A device's health as the node reads it: the report while it holds,
// else unknown (healthinfo.go getHealthInfo).
func TestHealthAt(t *testing.T) {
	bad := dev("gpu-0", dra.HealthUnhealthy, t0)
	bad.Message = "ECC errors"
	long := dev("gpu-1", dra.HealthHealthy, t0)
	long.HealthCheckTimeout = time.Hour
	zero := dev("gpu-2", dra.HealthHealthy, t0)
	zero.HealthCheckTimeout = 0 // a file of an older node: the default
	h := dra.Health{"gpu.example.com": {Devices: map[string]dra.DeviceHealth{"node1/gpu-0": bad, "node1/gpu-1": long, "node1/gpu-2": zero}}}
	unknown := func(name string) dra.DeviceHealth {
		return dra.DeviceHealth{PoolName: "node1", DeviceName: name, Health: dra.HealthUnknown}
	}
	for _, tc := range []struct {
		name, driver, device string
		after                time.Duration
		want                 dra.DeviceHealth
	}{
		{"within the default timeout", "gpu.example.com", "gpu-0", 30 * time.Second, bad},
		{"past it", "gpu.example.com", "gpu-0", 31 * time.Second, unknown("gpu-0")},
		{"the device's own timeout", "gpu.example.com", "gpu-1", 59 * time.Minute, long},
		{"no timeout: the default", "gpu.example.com", "gpu-2", 31 * time.Second, unknown("gpu-2")},
		{"never reported", "gpu.example.com", "gpu-9", 0, unknown("gpu-9")},
		{"an unknown driver", "nic.example.com", "gpu-0", 0, unknown("gpu-0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, h.At(tc.driver, "node1", tc.device, t0.Add(tc.after)))
		})
	}
}

// End to end through a plugin's health stream: the node opens it when the
// plugin registers; each report reaches the health (and HealthFile), the
// pods using a changed device are due, and their containers' statuses
// show it; a report that no longer holds reads Unknown; the stream's end
// forgets the driver's devices. In a synctest bubble, with the plugin in
// memory and a fake clock.
func TestHealthStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		clock := clocktesting.NewFakeClock(t0)
		plugin, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: "/plugins/gpu.sock", Health: true, InMemory: true})
		require.NoError(t, err)
		t.Cleanup(plugin.Stop)
		plugin.SetDevices("gpu", device("gpu-0", nil, "example.com/gpu=0"))
		m, err := dra.New(dra.Options{Claims: apiClaims(claim("gpu", "gpu.example.com")), StateDir: dir, Dialer: dratest.Dialer(plugin), Clock: clock})
		require.NoError(t, err)
		t.Cleanup(m.Registry().Close)
		register(t, m, plugin)
		synctest.Wait()
		assert.Equal(t, 1, plugin.Watchers())

		pod := podWith(byName("g", "gpu"))
		pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "g"}}
		require.NoError(t, m.PrepareResources(context.Background(), pod))
		status := func() []v1.ResourceStatus {
			st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app"}}}
			m.UpdateAllocatedResourcesStatus(pod, st)
			return st.ContainerStatuses[0].AllocatedResourcesStatus
		}
		want := func(h v1.ResourceHealthStatus, msg string) []v1.ResourceStatus {
			rh := v1.ResourceHealth{ResourceID: "example.com/gpu=0", Health: h}
			if msg != "" {
				rh.Message = &msg
			}
			return []v1.ResourceStatus{{Name: "claim:g", Resources: []v1.ResourceHealth{rh}}}
		}
		assert.Equal(t, want(v1.ResourceHealthStatusUnknown, ""), status(), "no report yet")

		id := &drahealthv1alpha1.DeviceIdentifier{PoolName: "node1", DeviceName: "gpu-0"}
		plugin.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: id, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY, Message: "ECC errors"},
			&drahealthv1alpha1.DeviceHealth{Device: &drahealthv1alpha1.DeviceIdentifier{PoolName: "node1", DeviceName: "unused"}, Health: drahealthv1alpha1.HealthStatus_HEALTHY})
		synctest.Wait()
		assert.Equal(t, []types.UID{podUID}, m.TakeHealthChanges())
		assert.Empty(t, m.TakeHealthChanges(), "once")
		assert.Equal(t, want(v1.ResourceHealthStatusUnhealthy, "ECC errors"), status())

		var file map[string]map[string]map[string]map[string]any
		b, err := os.ReadFile(filepath.Join(dir, dra.HealthFile))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &file))
		assert.Equal(t, map[string]any{"PoolName": "node1", "DeviceName": "gpu-0", "Health": "Unhealthy",
			"LastUpdated": "2026-01-01T00:00:00Z", "HealthCheckTimeout": float64(30 * time.Second), "Message": "ECC errors"},
			file["gpu.example.com"]["Devices"]["node1/gpu-0"], "upstream's dra_health_state")

		plugin.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: &drahealthv1alpha1.DeviceIdentifier{PoolName: "node1", DeviceName: "unused"}, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY})
		synctest.Wait()
		assert.Empty(t, m.TakeHealthChanges(), "a device no pod uses")

		clock.Step(31 * time.Second)
		assert.Equal(t, want(v1.ResourceHealthStatusUnknown, ""), status(), "the report no longer holds")
		plugin.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: id, Health: drahealthv1alpha1.HealthStatus_HEALTHY})
		synctest.Wait()
		assert.Equal(t, []types.UID{podUID}, m.TakeHealthChanges())
		assert.Equal(t, want(v1.ResourceHealthStatusHealthy, ""), status())

		restarted, err := dra.New(dra.Options{StateDir: dir, Clock: clock})
		require.NoError(t, err)
		assert.Equal(t, m.Health(), restarted.Health(), "read back from the file")

		m.Registry().DeRegisterPlugin("gpu.example.com", plugin.Endpoint())
		synctest.Wait()
		assert.Equal(t, 0, plugin.Watchers())
		assert.Empty(t, m.Health()["gpu.example.com"].Devices, "the stream's end forgets the driver's devices")
		assert.Equal(t, want(v1.ResourceHealthStatusUnknown, ""), status())
	})
}

// A plugin that does not serve the health service: the stream fails, and
// is opened again every 5 seconds, as upstream's; preparing works all the
// same.
func TestHealthStreamOfAPluginWithoutIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := clocktesting.NewFakeClock(t0)
		plugin, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: "/plugins/gpu.sock", InMemory: true})
		require.NoError(t, err)
		t.Cleanup(plugin.Stop)
		m, err := dra.New(dra.Options{Claims: apiClaims(claim("gpu", "gpu.example.com")), Dialer: dratest.Dialer(plugin), Clock: clock})
		require.NoError(t, err)
		t.Cleanup(m.Registry().Close)
		register(t, m, plugin)
		synctest.Wait()
		assert.True(t, clock.HasWaiters(), "waiting to try again")
		clock.Step(dra.HealthRetryPeriod)
		synctest.Wait()
		assert.True(t, clock.HasWaiters(), "failed again, waiting again")
		assert.NoError(t, m.PrepareResources(context.Background(), podWith(byName("g", "gpu"))))
	})
}
