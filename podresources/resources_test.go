package podresources_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
	alpha "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/kubeletkit/kubeletkit/podresources"
)

const gpu, nic = "example.com/gpu", "example.com/nic"

func TestPodResources(t *testing.T) {
	gpus := devs{held: map[types.UID]map[string]map[string][]string{
		"train-uid": {
			"main":    {gpu: {"gpu3", "gpu1"}, nic: {"nic0"}},
			"sidecar": {nic: {"nic1"}},
			"init":    {gpu: {"gpu1"}},
		},
	}}
	blocks := []*api.ContainerMemory{{MemoryType: "memory", Size: 1 << 30}}
	claims := podresources.DynamicResourcesFunc(func(_ *v1.Pod, c *v1.Container) []*api.DynamicResource {
		if c.Name != "main" {
			return nil
		}
		return []*api.DynamicResource{{ClaimName: "gpu-claim", ClaimNamespace: "ml"}}
	})
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		sources podresources.Sources
		want    *api.PodResources
	}{{
		name: "no sources: policy none, no devices, no claims",
		pod:  pod("ml", "train", nil, "main"),
		want: &api.PodResources{Name: "train", Namespace: "ml", Containers: []*api.ContainerResources{{Name: "main"}}},
	}, {
		name: "sidecars then containers; a regular init container is left out",
		pod:  pod("ml", "train", []string{"init", "sidecar"}, "main", "logger"),
		want: &api.PodResources{Name: "train", Namespace: "ml", Containers: []*api.ContainerResources{
			{Name: "sidecar"}, {Name: "main"}, {Name: "logger"}}},
	}, {
		name:    "one entry per device, by resource then ID",
		pod:     pod("ml", "train", []string{"init", "sidecar"}, "main", "logger"),
		sources: podresources.Sources{Devices: gpus},
		want: &api.PodResources{Name: "train", Namespace: "ml", Containers: []*api.ContainerResources{
			{Name: "sidecar", Devices: []*api.ContainerDevices{{ResourceName: nic, DeviceIds: []string{"nic1"}}}},
			{Name: "main", Devices: []*api.ContainerDevices{
				{ResourceName: gpu, DeviceIds: []string{"gpu1"}},
				{ResourceName: gpu, DeviceIds: []string{"gpu3"}},
				{ResourceName: nic, DeviceIds: []string{"nic0"}},
			}},
			{Name: "logger"},
		}},
	}, {
		name: "one entry per device and NUMA node, none for a device without one",
		pod:  pod("ml", "train", nil, "main"),
		sources: podresources.Sources{Devices: devs{held: gpus.held,
			numa: map[string][]int{"gpu1": {1}, "gpu3": {0, 1}}}},
		want: &api.PodResources{Name: "train", Namespace: "ml", Containers: []*api.ContainerResources{
			{Name: "main", Devices: []*api.ContainerDevices{
				{ResourceName: gpu, DeviceIds: []string{"gpu1"}, Topology: numaTopology(1)},
				{ResourceName: gpu, DeviceIds: []string{"gpu3"}, Topology: numaTopology(0)},
				{ResourceName: gpu, DeviceIds: []string{"gpu3"}, Topology: numaTopology(1)},
				{ResourceName: nic, DeviceIds: []string{"nic0"}},
			}},
		}},
	}, {
		name:    "another pod's devices are not this one's",
		pod:     pod("ml", "eval", nil, "main"),
		sources: podresources.Sources{Devices: gpus},
		want:    &api.PodResources{Name: "eval", Namespace: "ml", Containers: []*api.ContainerResources{{Name: "main"}}},
	}, {
		name:    "CPUs, memory and claims from their managers",
		pod:     pod("ml", "train", nil, "main"),
		sources: podresources.Sources{CPUs: cpus{each: []int64{2, 3}}, Memory: memory{each: blocks}, DynamicResources: claims},
		want: &api.PodResources{Name: "train", Namespace: "ml", Containers: []*api.ContainerResources{{Name: "main",
			CpuIds: []int64{2, 3}, Memory: blocks, DynamicResources: []*api.DynamicResource{{ClaimName: "gpu-claim", ClaimNamespace: "ml"}}}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := podresources.PodResources(tc.pod, tc.sources)
			assert.True(t, proto.Equal(tc.want, got), "got %v\nwant %v", got, tc.want)
		})
	}
}

// numaTopology is a device's Topology of one NUMA node.
func numaTopology(node int64) *api.TopologyInfo {
	return &api.TopologyInfo{Nodes: []*api.NUMANode{{ID: node}}}
}

func TestAllocatable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources podresources.Sources
		want    *api.AllocatableResourcesResponse
	}{{
		name: "no sources: nothing, as upstream's policies none",
		want: &api.AllocatableResourcesResponse{},
	}, {
		name:    "every healthy device, one entry each",
		sources: podresources.Sources{Devices: devs{allocatable: map[string][]string{nic: {"nic0"}, gpu: {"gpu1", "gpu0"}}}},
		want: &api.AllocatableResourcesResponse{Devices: []*api.ContainerDevices{
			{ResourceName: gpu, DeviceIds: []string{"gpu0"}},
			{ResourceName: gpu, DeviceIds: []string{"gpu1"}},
			{ResourceName: nic, DeviceIds: []string{"nic0"}},
		}},
	}, {
		name: "with their NUMA nodes",
		sources: podresources.Sources{Devices: devs{allocatable: map[string][]string{gpu: {"gpu1", "gpu0"}},
			numa: map[string][]int{"gpu0": {0}, "gpu1": {1}}}},
		want: &api.AllocatableResourcesResponse{Devices: []*api.ContainerDevices{
			{ResourceName: gpu, DeviceIds: []string{"gpu0"}, Topology: numaTopology(0)},
			{ResourceName: gpu, DeviceIds: []string{"gpu1"}, Topology: numaTopology(1)},
		}},
	}, {
		name:    "CPUs and memory",
		sources: podresources.Sources{CPUs: cpus{allocatable: []int64{1, 2}}, Memory: memory{allocatable: []*api.ContainerMemory{{MemoryType: "memory", Size: 42}}}},
		want:    &api.AllocatableResourcesResponse{CpuIds: []int64{1, 2}, Memory: []*api.ContainerMemory{{MemoryType: "memory", Size: 42}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := podresources.Allocatable(tc.sources)
			assert.True(t, proto.Equal(tc.want, got), "got %v\nwant %v", got, tc.want)
		})
	}
}

func TestAlphaPodResources(t *testing.T) {
	d := devs{held: map[types.UID]map[string]map[string][]string{"train-uid": {
		"main": {gpu: {"gpu0"}}, "sidecar": {nic: {"nic0"}}}}}
	got := podresources.AlphaPodResources(pod("ml", "train", []string{"sidecar"}, "main"), d)
	want := &alpha.PodResources{Name: "train", Namespace: "ml", Containers: []*alpha.ContainerResources{
		{Name: "main", Devices: []*alpha.ContainerDevices{{ResourceName: gpu, DeviceIds: []string{"gpu0"}}}}}}
	assert.True(t, proto.Equal(want, got), "v1alpha1 reports regular containers only: got %v", got)
}

// The Service answers List with the active pods only, and Get of a pod
// that is not active with upstream's error.
func TestService(t *testing.T) {
	running, done := pod("ml", "train", nil, "main"), pod("ml", "done", nil, "main")
	other := pod("web", "train", nil, "main")
	s, err := podresources.New(podresources.Options{Pods: pods{active: []*v1.Pod{other, running}, all: []*v1.Pod{other, running, done}}})
	require.NoError(t, err)
	svc := s.Service()
	ctx := context.Background()

	list, err := svc.List(ctx, &api.ListPodResourcesRequest{})
	require.NoError(t, err)
	var names []string
	for _, p := range list.GetPodResources() {
		names = append(names, p.GetNamespace()+"/"+p.GetName())
	}
	assert.Equal(t, []string{"ml/train", "web/train"}, names, "active pods, by namespace and name")

	for _, tc := range []struct {
		ns, name string
		wantErr  string
	}{
		{"ml", "train", ""},
		{"web", "train", ""},
		{"ml", "done", "pod done in namespace ml not found"},
		{"ml", "missing", "pod missing in namespace ml not found"},
		{"", "", "pod  in namespace  not found"},
	} {
		got, err := svc.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: tc.ns, PodName: tc.name})
		if tc.wantErr != "" {
			assert.Equal(t, codes.Unknown, status.Code(err), "%s/%s", tc.ns, tc.name)
			assert.Equal(t, tc.wantErr, status.Convert(err).Message())
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.ns, got.GetPodResources().GetNamespace())
		assert.Equal(t, tc.name, got.GetPodResources().GetName())
	}
}

// With ListAllPods (upstream's KubeletPodResourcesListUseActivePods off)
// List answers every pod the node holds, finished ones too.
func TestServiceListAllPods(t *testing.T) {
	running, done := pod("ml", "train", nil, "main"), pod("ml", "done", nil, "main")
	s, err := podresources.New(podresources.Options{Pods: pods{active: []*v1.Pod{running}, all: []*v1.Pod{running, done}}, ListAllPods: true})
	require.NoError(t, err)
	list, err := s.Service().List(context.Background(), &api.ListPodResourcesRequest{})
	require.NoError(t, err)
	var names []string
	for _, p := range list.GetPodResources() {
		names = append(names, p.GetNamespace()+"/"+p.GetName())
	}
	assert.Equal(t, []string{"ml/done", "ml/train"}, names)
}

func TestNewRefusesMissingPods(t *testing.T) {
	_, err := podresources.New(podresources.Options{})
	assert.ErrorIs(t, err, podresources.ErrInvalidOptions)
	_, err = podresources.New(podresources.Options{Pods: pods{}, QPS: -1})
	assert.ErrorIs(t, err, podresources.ErrInvalidOptions)
}
