package podresources

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Pods are the pods the API reports on.
type Pods interface {
	// ActivePods are upstream's active pods: the admitted pods that are
	// not known to have terminated, and not in a terminal phase unless
	// they are still being stopped. List and Get report these.
	ActivePods() []*v1.Pod
	// Pods are every pod the node holds, terminal or not (upstream's pod
	// manager), which v1alpha1's List reports.
	Pods() []*v1.Pod
}

// Devices are the devices of the device plugins (package devices'
// Manager has both methods).
type Devices interface {
	// Devices returns the device IDs each resource gave a container, by
	// resource name; nil when it holds none.
	Devices(uid types.UID, container string) map[string][]string
	// AllocatableDevices returns the IDs of each resource's healthy
	// devices, by resource name.
	AllocatableDevices() map[string][]string
	// NUMANodes returns the NUMA nodes of a device as its plugin listed
	// them; nil when it listed none.
	NUMANodes(resource, id string) []int
}

// CPUs are the exclusive CPUs of a CPU manager. Without one (nil), the API
// answers as upstream's CPU manager with the policy "none": no CPU is
// exclusive and none is allocatable.
type CPUs interface {
	// CPUs returns the CPUs given to a container exclusively.
	CPUs(uid types.UID, container string) []int64
	// AllocatableCPUs returns the CPUs that can be given exclusively.
	AllocatableCPUs() []int64
}

// Memory is the memory blocks of a memory manager. Without one (nil), the
// API answers as upstream's memory manager with the policy "None": no
// memory is pinned and none is allocatable.
type Memory interface {
	// Memory returns the memory blocks pinned for a container.
	Memory(uid types.UID, container string) []*api.ContainerMemory
	// AllocatableMemory returns the memory that can be pinned.
	AllocatableMemory() []*api.ContainerMemory
}

// DynamicResources are the devices a DRA manager prepared for a
// container's resource claims. Without one (nil), every container has
// none, as upstream answers for a pod without claims.
type DynamicResources interface {
	// DynamicResources returns the prepared devices of the claims a
	// container uses.
	DynamicResources(pod *v1.Pod, c *v1.Container) []*api.DynamicResource
}

// DynamicResourcesFunc adapts a function to DynamicResources.
type DynamicResourcesFunc func(pod *v1.Pod, c *v1.Container) []*api.DynamicResource

// DynamicResources calls f.
func (f DynamicResourcesFunc) DynamicResources(pod *v1.Pod, c *v1.Container) []*api.DynamicResource {
	return f(pod, c)
}

var _ DynamicResources = DynamicResourcesFunc(nil)

// Sources are where a pod's resources are read. Devices, CPUs, Memory and
// DynamicResources may be nil: none of that kind.
type Sources struct {
	Devices          Devices
	CPUs             CPUs
	Memory           Memory
	DynamicResources DynamicResources
}
