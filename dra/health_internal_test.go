package dra

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Upstream's reading of a device's report (manager.go buildDeviceHealth).
func TestHealthFromReport(t *testing.T) {
	dev := &drahealthv1alpha1.DeviceIdentifier{PoolName: "node1", DeviceName: "gpu-0"}
	long := strings.Repeat("x", v1.ResourceHealthMessageMaxLength+1)
	for _, tc := range []struct {
		name string
		in   *drahealthv1alpha1.DeviceHealth
		want DeviceHealth
	}{
		{"healthy, no timeout: the default",
			&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_HEALTHY, LastUpdatedTime: 100},
			DeviceHealth{PoolName: "node1", DeviceName: "gpu-0", Health: HealthHealthy, LastUpdated: time.Unix(100, 0), HealthCheckTimeout: DefaultHealthTimeout}},
		{"unhealthy with a message and a timeout",
			&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY, HealthCheckTimeoutSeconds: 90, Message: "ECC errors"},
			DeviceHealth{PoolName: "node1", DeviceName: "gpu-0", Health: HealthUnhealthy, LastUpdated: time.Unix(0, 0), HealthCheckTimeout: 90 * time.Second, Message: "ECC errors"}},
		{"unknown, a negative timeout: the default",
			&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_UNKNOWN, HealthCheckTimeoutSeconds: -5},
			DeviceHealth{PoolName: "node1", DeviceName: "gpu-0", Health: HealthUnknown, LastUpdated: time.Unix(0, 0), HealthCheckTimeout: DefaultHealthTimeout}},
		{"a health the node does not know: unknown",
			&drahealthv1alpha1.DeviceHealth{Device: dev, Health: 7},
			DeviceHealth{PoolName: "node1", DeviceName: "gpu-0", Health: HealthUnknown, LastUpdated: time.Unix(0, 0), HealthCheckTimeout: DefaultHealthTimeout}},
		{"a message too long is cut",
			&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_HEALTHY, Message: long},
			DeviceHealth{PoolName: "node1", DeviceName: "gpu-0", Health: HealthHealthy, LastUpdated: time.Unix(0, 0), HealthCheckTimeout: DefaultHealthTimeout,
				Message: long[:v1.ResourceHealthMessageMaxLength-3] + "..."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := healthFromReport(tc.in)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got.Message), v1.ResourceHealthMessageMaxLength)
		})
	}
}

// The pure part of what a pod's container status gets (upstream's
// UpdateAllocatedResourcesStatus with buildResourceHealth).
func TestSetClaimsHealth(t *testing.T) {
	claims := map[string]ClaimState{
		"gpu": {ClaimName: "gpu", DriverState: map[string]DriverState{
			"gpu.example.com": {Devices: []Device{
				{PoolName: "node1", DeviceName: "gpu-0", RequestNames: []string{"big"}, CDIDeviceIDs: []string{"example.com/gpu=0", "example.com/gpu=all"}},
				{PoolName: "node1", DeviceName: "gpu-1", RequestNames: []string{"small"}},
				{PoolName: "node1", DeviceName: "gpu-2"}, // every request
			}},
			"z.example.com": {Devices: []Device{{PoolName: "p", DeviceName: "d", RequestNames: []string{"big"}, CDIDeviceIDs: []string{"example.com/gpu=0"}}}}, // an ID already seen
		}},
		"made-from-template": {DriverState: map[string]DriverState{"gpu.example.com": {Devices: []Device{{PoolName: "node1", DeviceName: "gpu-0"}}}}},
		"nothing":            {DriverState: map[string]DriverState{"gpu.example.com": {}}},
	}
	health := func(driver, pool, device string) DeviceHealth {
		switch device {
		case "gpu-0":
			return DeviceHealth{Health: HealthHealthy}
		case "gpu-1":
			return DeviceHealth{Health: HealthUnhealthy, Message: "ECC errors"}
		}
		return DeviceHealth{Health: HealthUnknown}
	}
	msg := "ECC errors"
	gpu0 := v1.ResourceHealth{ResourceID: "example.com/gpu=0", Health: v1.ResourceHealthStatusHealthy}
	gpu1 := v1.ResourceHealth{ResourceID: "gpu.example.com/node1/gpu-1", Health: v1.ResourceHealthStatusUnhealthy, Message: &msg}
	gpu2 := v1.ResourceHealth{ResourceID: "gpu.example.com/node1/gpu-2", Health: v1.ResourceHealthStatusUnknown}
	plugin := v1.ResourceStatus{Name: "example.com/nic", Resources: []v1.ResourceHealth{{ResourceID: "nic0", Health: v1.ResourceHealthStatusHealthy}}}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.PodSpec{
		ResourceClaims: []v1.PodResourceClaim{
			{Name: "g", ResourceClaimName: ptr.To("gpu")},
			{Name: "t", ResourceClaimTemplateName: ptr.To("tmpl")},
			{Name: "u", ResourceClaimTemplateName: ptr.To("tmpl")}, // not made yet
			{Name: "n", ResourceClaimName: ptr.To("nothing")},
			{Name: "x", ResourceClaimName: ptr.To("unprepared")},
		}},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "t", ResourceClaimName: ptr.To("made-from-template")}}}}
	for _, tc := range []struct {
		name   string
		claims []v1.ResourceClaim
		before []v1.ResourceStatus
		want   []v1.ResourceStatus
	}{
		{"a whole claim: every device, each ID once, drivers by name", []v1.ResourceClaim{{Name: "g"}}, nil,
			[]v1.ResourceStatus{{Name: "claim:g", Resources: []v1.ResourceHealth{gpu0, gpu1, gpu2}}}},
		{"one request: its devices and those of every request", []v1.ResourceClaim{{Name: "g", Request: "small"}}, nil,
			[]v1.ResourceStatus{{Name: "claim:g/small", Resources: []v1.ResourceHealth{gpu1, gpu2}}}},
		{"a subrequest counts as its request", []v1.ResourceClaim{{Name: "g", Request: "big/fast"}}, nil,
			[]v1.ResourceStatus{{Name: "claim:g/big/fast", Resources: []v1.ResourceHealth{gpu0, gpu2}}}},
		{"a template's claim by its status", []v1.ResourceClaim{{Name: "t"}}, nil,
			[]v1.ResourceStatus{{Name: "claim:t", Resources: []v1.ResourceHealth{{ResourceID: "gpu.example.com/node1/gpu-0", Health: v1.ResourceHealthStatusHealthy}}}}},
		{"a device plugin's entry is kept, an old entry of the claim replaced",
			[]v1.ResourceClaim{{Name: "g", Request: "small"}},
			[]v1.ResourceStatus{{Name: "claim:g/small", Resources: []v1.ResourceHealth{gpu0}}, plugin},
			[]v1.ResourceStatus{{Name: "claim:g/small", Resources: []v1.ResourceHealth{gpu1, gpu2}}, plugin}},
		{"claims not made, not prepared, or prepared with no device: no entry",
			[]v1.ResourceClaim{{Name: "u"}, {Name: "x"}, {Name: "n"}, {Name: "missing"}}, []v1.ResourceStatus{plugin}, []v1.ResourceStatus{plugin}},
		{"an entry of a claim left with no device is dropped",
			[]v1.ResourceClaim{{Name: "n"}}, []v1.ResourceStatus{{Name: "claim:n", Resources: []v1.ResourceHealth{gpu0}}}, []v1.ResourceStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Claims: tc.claims}}, {Name: "other"}}
			p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Claims: tc.claims}}}
			st := &v1.PodStatus{
				ContainerStatuses:     []v1.ContainerStatus{{Name: "app", AllocatedResourcesStatus: tc.before}, {Name: "other", AllocatedResourcesStatus: []v1.ResourceStatus{plugin}}},
				InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}},
			}
			setClaimsHealth(p, st, func(name string) (ClaimState, bool) { c, ok := claims[name]; return c, ok }, health)
			assert.Equal(t, tc.want, st.ContainerStatuses[0].AllocatedResourcesStatus)
			assert.Equal(t, []v1.ResourceStatus{plugin}, st.ContainerStatuses[1].AllocatedResourcesStatus, "a container without claims is left alone")
			assert.Nil(t, st.InitContainerStatuses[0].AllocatedResourcesStatus, "init containers are not reported, as upstream")
		})
	}
}
