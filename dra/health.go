package dra

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// HealthFile is the name of the file in Options.StateDir that keeps the
// devices' health across restarts, upstream's dra_health_state.
const HealthFile = "dra_health_state"

// DefaultHealthTimeout is how long a device's reported health holds when
// its plugin gives no timeout of its own: past it, without a new report,
// the device's health is Unknown (upstream's 30 seconds).
const DefaultHealthTimeout = 30 * time.Second

// HealthStatus is a device's health as a container's status shows it.
type HealthStatus string

// The health of a device, upstream's words (v1.ResourceHealthStatus).
const (
	HealthHealthy   HealthStatus = "Healthy"
	HealthUnhealthy HealthStatus = "Unhealthy"
	HealthUnknown   HealthStatus = "Unknown"
)

// DeviceHealth is what the node knows of one device's health: the last
// report of its driver's plugin (NodeWatchResources), when the node
// received it and how long it holds. The field names are those of
// upstream's health file.
type DeviceHealth struct {
	PoolName   string
	DeviceName string
	Health     HealthStatus
	// LastUpdated is when the node received the report (upstream ignores
	// the plugin's own time).
	LastUpdated time.Time
	// HealthCheckTimeout is how long the report holds; zero means
	// DefaultHealthTimeout.
	HealthCheckTimeout time.Duration
	// Message is the plugin's word on the health, at most
	// v1.ResourceHealthMessageMaxLength bytes.
	Message string
}

// DriverHealth is the health of one driver's devices, by
// "<pool>/<device>".
type DriverHealth struct {
	Devices map[string]DeviceHealth
}

// Health is the health of every device the node was told of, by driver:
// the content of HealthFile (JSON, as upstream's).
type Health map[string]DriverHealth

func deviceKey(pool, device string) string { return pool + "/" + device }

func (d DeviceHealth) timeout() time.Duration {
	if d.HealthCheckTimeout == 0 {
		return DefaultHealthTimeout
	}
	return d.HealthCheckTimeout
}

// At is the health of a device of driver at now, as upstream's health
// cache answers: the last report while it holds; Unknown with no message
// when there was none or it no longer holds.
func (h Health) At(driver, pool, device string, now time.Time) DeviceHealth {
	d, ok := h[driver].Devices[deviceKey(pool, device)]
	if !ok || now.Sub(d.LastUpdated) > d.timeout() {
		return DeviceHealth{PoolName: pool, DeviceName: device, Health: HealthUnknown}
	}
	return d
}

// Merge takes a report of driver's plugin received at now into h, as
// upstream's health cache does, and returns the devices whose health
// changed: each reported device is recorded as of now, and counts as
// changed when it is new or its health, message or timeout differ; a
// device of the driver that the report leaves out and whose last report
// no longer holds becomes Unknown (no message, as of now) and counts as
// changed when it was not Unknown already. The reported devices come
// first in the report's order, then the others by pool and name.
func (h Health) Merge(driver string, report []DeviceHealth, now time.Time) []DeviceHealth {
	dh, ok := h[driver]
	if !ok || dh.Devices == nil {
		dh = DriverHealth{Devices: map[string]DeviceHealth{}}
		h[driver] = dh
	}
	var changed []DeviceHealth
	reported := make(map[string]bool, len(report))
	for _, d := range report {
		d.LastUpdated = now
		k := deviceKey(d.PoolName, d.DeviceName)
		reported[k] = true
		old, known := dh.Devices[k]
		if !known || old.Health != d.Health || old.Message != d.Message || old.HealthCheckTimeout != d.HealthCheckTimeout {
			changed = append(changed, d)
		}
		dh.Devices[k] = d
	}
	for _, k := range slices.Sorted(maps.Keys(dh.Devices)) {
		d := dh.Devices[k]
		if reported[k] || d.Health == HealthUnknown || now.Sub(d.LastUpdated) <= d.timeout() {
			continue
		}
		d.Health, d.Message, d.LastUpdated = HealthUnknown, "", now
		dh.Devices[k] = d
		changed = append(changed, d)
	}
	return changed
}

// healthFromReport is a device's health as its plugin reported it, as
// upstream reads it: a timeout of zero or less seconds is
// DefaultHealthTimeout, a health the node does not know is Unknown, and a
// message longer than v1.ResourceHealthMessageMaxLength is cut to fit,
// ending in "...".
func healthFromReport(d *drahealthv1alpha1.DeviceHealth) DeviceHealth {
	timeout := DefaultHealthTimeout
	if s := d.GetHealthCheckTimeoutSeconds(); s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	health := HealthUnknown
	switch d.GetHealth() {
	case drahealthv1alpha1.HealthStatus_HEALTHY:
		health = HealthHealthy
	case drahealthv1alpha1.HealthStatus_UNHEALTHY:
		health = HealthUnhealthy
	}
	msg := d.GetMessage()
	if len(msg) > v1.ResourceHealthMessageMaxLength {
		msg = msg[:v1.ResourceHealthMessageMaxLength-3] + "..."
	}
	return DeviceHealth{PoolName: d.GetDevice().GetPoolName(), DeviceName: d.GetDevice().GetDeviceName(), Health: health,
		LastUpdated: time.Unix(d.GetLastUpdatedTime(), 0), HealthCheckTimeout: timeout, Message: msg}
}

// resourceHealth is a prepared device's entry in a container's
// allocatedResourcesStatus: its first CDI device ID, or
// "<driver>/<pool>/<device>" when it has none, and its health with the
// message (ResourceHealthStatusMessage), as upstream's.
func resourceHealth(driver string, d Device, h DeviceHealth) v1.ResourceHealth {
	id := fmt.Sprintf("%s/%s/%s", driver, d.PoolName, d.DeviceName)
	if len(d.CDIDeviceIDs) > 0 {
		id = d.CDIDeviceIDs[0]
	}
	rh := v1.ResourceHealth{ResourceID: v1.ResourceID(id), Health: v1.ResourceHealthStatusUnknown}
	switch h.Health {
	case HealthHealthy:
		rh.Health = v1.ResourceHealthStatusHealthy
	case HealthUnhealthy:
		rh.Health = v1.ResourceHealthStatusUnhealthy
	}
	if h.Message != "" {
		rh.Message = &h.Message
	}
	return rh
}

// ClaimResourceName is the name of a claim's entry in a container's
// allocatedResourcesStatus: "claim:<pod claim>", or
// "claim:<pod claim>/<request>" for a container that uses one request.
func ClaimResourceName(c v1.ResourceClaim) v1.ResourceName {
	if c.Request == "" {
		return v1.ResourceName("claim:" + c.Name)
	}
	return v1.ResourceName("claim:" + c.Name + "/" + c.Request)
}

// setClaimsHealth fills the allocatedResourcesStatus of each container
// status of st whose container (of spec.containers) uses claims, as
// upstream's DRA manager does: an entry per resources.claims item
// (ClaimResourceName) whose claim the node prepared (claim finds its
// state by the ResourceClaim's name), listing the health of each device
// prepared for it (for a request: the devices that serve it, a
// subrequest counting as its request), each resource ID once; the
// entries of other resources (device plugins') are kept, and any entry
// left with no device dropped. Drivers come by name, where upstream's
// order is a map's; the entries keep their order, new ones last.
func setClaimsHealth(pod *v1.Pod, st *v1.PodStatus, claim func(name string) (ClaimState, bool), health func(driver, pool, device string) DeviceHealth) {
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		j := slices.IndexFunc(pod.Spec.Containers, func(c v1.Container) bool { return c.Name == cs.Name })
		if j < 0 || len(pod.Spec.Containers[j].Resources.Claims) == 0 {
			continue
		}
		for _, rc := range pod.Spec.Containers[j].Resources.Claims {
			name := podClaimName(pod, rc.Name)
			if name == "" {
				continue
			}
			state, ok := claim(name)
			if !ok {
				continue
			}
			rs := v1.ResourceStatus{Name: ClaimResourceName(rc), Resources: []v1.ResourceHealth{}}
			base, _, _ := strings.Cut(rc.Request, "/")
			seen := map[v1.ResourceID]bool{}
			for _, driver := range slices.Sorted(maps.Keys(state.DriverState)) {
				for _, d := range state.DriverState[driver].Devices {
					if rc.Request != "" && len(d.RequestNames) > 0 && !slices.Contains(d.RequestNames, base) {
						continue
					}
					rh := resourceHealth(driver, d, health(driver, d.PoolName, d.DeviceName))
					if !seen[rh.ResourceID] {
						seen[rh.ResourceID] = true
						rs.Resources = append(rs.Resources, rh)
					}
				}
			}
			if k := slices.IndexFunc(cs.AllocatedResourcesStatus, func(s v1.ResourceStatus) bool { return s.Name == rs.Name }); k >= 0 {
				cs.AllocatedResourcesStatus[k] = rs
			} else {
				cs.AllocatedResourcesStatus = append(cs.AllocatedResourcesStatus, rs)
			}
		}
		cs.AllocatedResourcesStatus = slices.DeleteFunc(cs.AllocatedResourcesStatus, func(s v1.ResourceStatus) bool { return len(s.Resources) == 0 })
	}
}

// podClaimName is the name of the ResourceClaim of the pod's claim named
// podClaim, "" when there is none (yet).
func podClaimName(pod *v1.Pod, podClaim string) string {
	for i := range pod.Spec.ResourceClaims {
		if pod.Spec.ResourceClaims[i].Name == podClaim {
			name, _, err := claimName(pod, &pod.Spec.ResourceClaims[i])
			if err != nil {
				return ""
			}
			return name
		}
	}
	return ""
}
