package podresources

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
	alpha "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ReportedContainers are the containers of a pod the API reports, in
// order: its sidecars (restartable init containers), then its containers.
// A regular init container, which has ended by the time the pod runs, is
// left out, as upstream leaves it out.
func ReportedContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podspec.IsSidecar(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// PodResources is what the v1 API answers for one pod: its name and
// namespace, and for each reported container (ReportedContainers) its
// devices, exclusive CPUs, pinned memory and DRA devices. The pod-level
// CPUs and memory stay empty, as upstream leaves them without a pod-level
// exclusive allocation.
func PodResources(pod *v1.Pod, s Sources) *api.PodResources {
	cs := ReportedContainers(pod)
	out := &api.PodResources{Name: pod.Name, Namespace: pod.Namespace, Containers: make([]*api.ContainerResources, 0, len(cs))}
	for _, c := range cs {
		out.Containers = append(out.Containers, containerResources(pod, c, s))
	}
	return out
}

func containerResources(pod *v1.Pod, c *v1.Container, s Sources) *api.ContainerResources {
	out := &api.ContainerResources{Name: c.Name}
	if s.Devices != nil {
		out.Devices = ContainerDevices(s.Devices.Devices(pod.UID, c.Name), s.Devices.NUMANodes)
	}
	if s.CPUs != nil {
		out.CpuIds = s.CPUs.CPUs(pod.UID, c.Name)
	}
	if s.Memory != nil {
		out.Memory = s.Memory.Memory(pod.UID, c.Name)
	}
	if s.DynamicResources != nil {
		out.DynamicResources = s.DynamicResources.DynamicResources(pod, c)
	}
	return out
}

// ContainerDevices turns device IDs by resource name into the API's
// entries as upstream reports them: one per device and NUMA node (numa
// gives a device's nodes), each with that node in its Topology, and one
// without a Topology for a device that has no node. Entries are sorted by
// resource and ID, then in the order of the device's nodes (upstream's
// order is a map's). numa may be nil: no device has a node.
func ContainerDevices(byResource map[string][]string, numa func(resource, id string) []int) []*api.ContainerDevices {
	var out []*api.ContainerDevices
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		ids := slices.Clone(byResource[res])
		sort.Strings(ids)
		for _, id := range ids {
			var nodes []int
			if numa != nil {
				nodes = numa(res, id)
			}
			if len(nodes) == 0 {
				out = append(out, &api.ContainerDevices{ResourceName: res, DeviceIds: []string{id}})
				continue
			}
			for _, n := range nodes {
				out = append(out, &api.ContainerDevices{ResourceName: res, DeviceIds: []string{id},
					Topology: &api.TopologyInfo{Nodes: []*api.NUMANode{{ID: int64(n)}}}})
			}
		}
	}
	return out
}

// Allocatable is what GetAllocatableResources answers: every healthy
// device, allocated or not (more a capacity than what is free, as
// upstream's), and the CPUs and memory that can be given exclusively.
func Allocatable(s Sources) *api.AllocatableResourcesResponse {
	out := &api.AllocatableResourcesResponse{}
	if s.Devices != nil {
		out.Devices = ContainerDevices(s.Devices.AllocatableDevices(), s.Devices.NUMANodes)
	}
	if s.CPUs != nil {
		out.CpuIds = s.CPUs.AllocatableCPUs()
	}
	if s.Memory != nil {
		out.Memory = s.Memory.AllocatableMemory()
	}
	return out
}

// AlphaPodResources is what the v1alpha1 API answers for one pod: its
// regular containers only (no sidecars), each with its devices, which
// carry no topology in that version (a device on two NUMA nodes is listed
// twice, as upstream converts the v1 entries).
func AlphaPodResources(pod *v1.Pod, d Devices) *alpha.PodResources {
	out := &alpha.PodResources{Name: pod.Name, Namespace: pod.Namespace, Containers: make([]*alpha.ContainerResources, 0, len(pod.Spec.Containers))}
	for _, c := range pod.Spec.Containers {
		cr := &alpha.ContainerResources{Name: c.Name}
		if d != nil {
			for _, dev := range ContainerDevices(d.Devices(pod.UID, c.Name), d.NUMANodes) {
				cr.Devices = append(cr.Devices, &alpha.ContainerDevices{ResourceName: dev.ResourceName, DeviceIds: dev.DeviceIds})
			}
		}
		out.Containers = append(out.Containers, cr)
	}
	return out
}

// FindPod returns the pod of pods with that namespace and name.
func FindPod(pods []*v1.Pod, namespace, name string) (*v1.Pod, bool) {
	for _, p := range pods {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// NotFound is Get's error for a pod that is not active: upstream's
// message, with the code gRPC gives a plain error (Unknown).
func NotFound(namespace, name string) error {
	return status.Error(codes.Unknown, fmt.Sprintf("pod %s in namespace %s not found", name, namespace))
}

// SortPods orders pods by namespace and name, then UID: List's order
// (upstream's is its pod manager's map order, none in particular).
func SortPods(pods []*v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
}
