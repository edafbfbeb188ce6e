package node_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func capacity() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
}

func runtimeStatus(runtimeReady, networkReady bool) *runtimeapi.StatusResponse {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: runtimeReady},
		{Type: runtimeapi.NetworkReady, Status: networkReady, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	}}}
}

type pressure struct{ mem, disk, pid bool }

func (p pressure) IsUnderMemoryPressure() bool { return p.mem }
func (p pressure) IsUnderDiskPressure() bool   { return p.disk }
func (p pressure) IsUnderPIDPressure() bool    { return p.pid }

func condition(s v1.NodeStatus, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestBuildStatusReady(t *testing.T) {
	healthy := node.Input{Capacity: capacity(), RuntimeStatus: runtimeStatus(true, true), Now: t0}
	tests := []struct {
		name    string
		mod     func(*node.Input)
		status  v1.ConditionStatus
		reason  string
		message string
	}{
		{"healthy", func(*node.Input) {}, v1.ConditionTrue, node.ReasonKubeletReady, node.MessageKubeletReady},
		{"runtime down", func(in *node.Input) { in.RuntimeStatus, in.RuntimeStatusErr = nil, errors.New("connection refused") },
			v1.ConditionFalse, node.ReasonKubeletNotReady, "container runtime is down: connection refused"},
		{"network not ready", func(in *node.Input) { in.RuntimeStatus = runtimeStatus(true, false) },
			v1.ConditionFalse, node.ReasonKubeletNotReady, "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"},
		{"pleg unhealthy", func(in *node.Input) { in.PLEGErr = errors.New("pleg was last seen active 3m1s ago; threshold is 3m0s") },
			v1.ConditionFalse, node.ReasonKubeletNotReady, "PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is 3m0s"},
		{"several problems", func(in *node.Input) {
			in.RuntimeStatus = runtimeStatus(false, true)
			in.PLEGErr = errors.New("pleg has yet to be successful")
		}, v1.ConditionFalse, node.ReasonKubeletNotReady, "[container runtime not ready: RuntimeReady=false reason: message:, PLEG is not healthy: pleg has yet to be successful]"},
		{"shutting down", func(in *node.Input) { in.ShutdownErr = errors.New("node is shutting down") },
			v1.ConditionFalse, node.ReasonKubeletNotReady, "node is shutting down"},
		{"shutting down with an unhealthy PLEG", func(in *node.Input) {
			in.PLEGErr = errors.New("pleg has yet to be successful")
			in.ShutdownErr = errors.New("node is shutting down")
		}, v1.ConditionFalse, node.ReasonKubeletNotReady, "[PLEG is not healthy: pleg has yet to be successful, node is shutting down]"},
		{"no capacity", func(in *node.Input) { in.Capacity = nil },
			v1.ConditionFalse, node.ReasonKubeletNotReady, "[missing node capacity for resources: cpu, missing node capacity for resources: memory, missing node capacity for resources: pods]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := healthy
			tc.mod(&in)
			s := node.BuildStatus(in)
			c := condition(s, v1.NodeReady)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Equal(t, tc.message, c.Message)
		})
	}
}

func TestBuildStatusPressureAndTransitions(t *testing.T) {
	in := node.Input{Capacity: capacity(), RuntimeStatus: runtimeStatus(true, true), Now: t0}
	first := node.BuildStatus(in)
	var types []v1.NodeConditionType
	for _, c := range first.Conditions {
		types = append(types, c.Type)
		assert.Equal(t, v1.ConditionFalse == c.Status, c.Type != v1.NodeReady)
	}
	assert.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}, types)
	assert.Equal(t, node.ReasonSufficientMemory, condition(first, v1.NodeMemoryPressure).Reason)
	assert.Equal(t, "kubelet has no disk pressure", condition(first, v1.NodeDiskPressure).Message)

	in.Old, in.Now, in.Pressure = &first, t0.Add(10*time.Second), pressure{mem: true, pid: true}
	second := node.BuildStatus(in)
	mem := condition(second, v1.NodeMemoryPressure)
	assert.Equal(t, v1.ConditionTrue, mem.Status)
	assert.Equal(t, node.ReasonInsufficientMemory, mem.Reason)
	assert.Equal(t, "kubelet has insufficient memory available", mem.Message)
	assert.Equal(t, node.ReasonInsufficientPID, condition(second, v1.NodePIDPressure).Reason)
	assert.True(t, in.Now.Equal(mem.LastTransitionTime.Time), "moved on change")
	disk := condition(second, v1.NodeDiskPressure)
	assert.True(t, t0.Equal(disk.LastTransitionTime.Time), "kept without change")
	assert.True(t, in.Now.Equal(disk.LastHeartbeatTime.Time), "heartbeat always moves")
}

func TestBuildStatusResourcesInfoImages(t *testing.T) {
	imgs := make([]*runtimeapi.Image, 0, 60)
	for i := range 60 {
		imgs = append(imgs, &runtimeapi.Image{Id: "sha256:x", Size: uint64(i), RepoTags: []string{"t1", "t2", "t3"}, RepoDigests: []string{"d1", "d2", "d3"}})
	}
	s := node.BuildStatus(node.Input{
		Capacity:       capacity(),
		Reserved:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("10Gi")},
		SystemInfo:     v1.NodeSystemInfo{KernelVersion: "6.8.0", OperatingSystem: "linux"},
		KubeletVersion: "v1.37.0",
		RuntimeVersion: &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.1.0"},
		RuntimeStatus:  runtimeStatus(true, true),
		Addresses:      []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.168.1.10"}, {Type: v1.NodeHostName, Address: "node1"}},
		Images:         imgs,
		KubeletPort:    10250,
		Now:            t0,
	})
	cpu := s.Allocatable[v1.ResourceCPU]
	assert.Equal(t, "3500m", cpu.String())
	mem := s.Allocatable[v1.ResourceMemory]
	assert.True(t, mem.IsZero(), "never below zero: %s", mem.String())
	pods := s.Allocatable[v1.ResourcePods]
	assert.Equal(t, int64(110), pods.Value())
	assert.Equal(t, "containerd://2.1.0", s.NodeInfo.ContainerRuntimeVersion)
	assert.Equal(t, "v1.37.0", s.NodeInfo.KubeletVersion)
	assert.Equal(t, "6.8.0", s.NodeInfo.KernelVersion)
	// Upstream's DisableNodeKubeProxyVersion (locked on since 1.36): the
	// kubelet reports no kube-proxy version.
	assert.Empty(t, s.NodeInfo.KubeProxyVersion) //nolint:staticcheck // the deprecated field stays empty, as upstream's
	assert.Equal(t, int32(10250), s.DaemonEndpoints.KubeletEndpoint.Port)
	assert.Len(t, s.Addresses, 2)
	require.Len(t, s.Images, node.MaxImages)
	assert.Equal(t, int64(59), s.Images[0].SizeBytes, "largest first")
	assert.Equal(t, []string{"d1", "d2", "d3", "t1", "t2"}, s.Images[0].Names)
}

// The declared features are listed sorted, once each, as the API server
// accepts them; none leaves the field unset.
func TestBuildStatusDeclaredFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"empty", []string{}, nil},
		{"one", []string{"ExtendWebSocketsToKubelet"}, []string{"ExtendWebSocketsToKubelet"}},
		{"sorted, once each", []string{"RestartAllContainers", "ExtendWebSocketsToKubelet", "RestartAllContainers", "Alpha/sub"},
			[]string{"Alpha/sub", "ExtendWebSocketsToKubelet", "RestartAllContainers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			s := node.BuildStatus(node.Input{Capacity: capacity(), DeclaredFeatures: in, Now: t0})
			assert.Equal(t, tc.want, s.DeclaredFeatures)
			assert.Equal(t, tc.in, in, "the input is left as it was")
		})
	}
}

func TestBuildStatusFeatures(t *testing.T) {
	withFeatures := func(sgp bool) *runtimeapi.StatusResponse {
		r := runtimeStatus(true, true)
		r.Features = &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: sgp}
		return r
	}
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		status *runtimeapi.StatusResponse
		err    error
		old    *v1.NodeFeatures
		want   *v1.NodeFeatures
	}{
		{name: "the runtime supports it", status: withFeatures(true), want: &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}},
		{name: "the runtime does not", status: withFeatures(false), old: &v1.NodeFeatures{SupplementalGroupsPolicy: &yes},
			want: &v1.NodeFeatures{SupplementalGroupsPolicy: &no}},
		{name: "a runtime that reports no features", status: runtimeStatus(true, true)},
		{name: "a runtime that does not answer keeps what it said", err: errors.New("unavailable"),
			old: &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}, want: &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := node.Input{Capacity: capacity(), RuntimeStatus: tc.status, RuntimeStatusErr: tc.err, Now: t0}
			if tc.old != nil {
				in.Old = &v1.NodeStatus{Features: tc.old}
			}
			assert.Equal(t, tc.want, node.BuildStatus(in).Features)
		})
	}
}

// The runtime's handlers, as upstream's RuntimeHandlers setter reports
// them: each with what it supports; kept while the runtime does not answer.
func TestBuildStatusRuntimeHandlers(t *testing.T) {
	yes, no := true, false
	handlers := runtimeStatus(true, true)
	handlers.RuntimeHandlers = []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		{Name: "kata"},
	}
	want := []v1.NodeRuntimeHandler{
		{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &yes}},
		{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &no}},
		{Name: "kata", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &no}},
	}
	for _, tc := range []struct {
		name   string
		status *runtimeapi.StatusResponse
		err    error
		old    []v1.NodeRuntimeHandler
		want   []v1.NodeRuntimeHandler
	}{
		{name: "three handlers", status: handlers, want: want},
		{name: "a runtime that reports none (containerd 1.6)", status: runtimeStatus(true, true), old: want},
		{name: "a runtime that does not answer keeps what it said", err: errors.New("unavailable"), old: want, want: want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := node.Input{Capacity: capacity(), RuntimeStatus: tc.status, RuntimeStatusErr: tc.err, Now: t0}
			if tc.old != nil {
				in.Old = &v1.NodeStatus{RuntimeHandlers: tc.old}
			}
			assert.Equal(t, tc.want, node.BuildStatus(in).RuntimeHandlers)
		})
	}
}
