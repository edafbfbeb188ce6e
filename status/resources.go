package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's smallest effective CPU values: a request at or below
// minMilliShares (2 shares) and a limit at or below minMilliCPULimit read
// as the allocated value, so that the status does not show the runtime's
// rounding of what the spec asked.
const (
	minMilliShares   = 2
	minMilliCPULimit = 10
	sharesPerCPU     = 1024
)

// containerResources is a container status's resources, as upstream
// (InPlacePodVerticalScaling, GA) reports them: the allocated ones (the
// spec the node admitted, spec's Resources), with the CPU request and
// limit and the memory limit of a running container replaced by what the
// runtime reports it runs with; where the runtime reports nothing of
// those, a running container keeps the value its previous status showed.
// The memory request is always the allocation's. A container that is not
// running shows its allocated resources.
func containerResources(spec *v1.Container, cs *runtimeapi.ContainerStatus, old *v1.ContainerStatus, id string) *v1.ResourceRequirements {
	res := spec.Resources.DeepCopy()
	if cs.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return res
	}
	var prev *v1.ResourceRequirements
	if old != nil && old.State.Running != nil && old.ContainerID == id {
		prev = old.Resources
	}
	cpuReq, cpuLim, memLim := runtimeResources(cs.GetResources().GetLinux())
	applyActual(res, prev, cpuReq, cpuLim, memLim)
	// The runtime never reports a memory request: the allocation's stands,
	// as upstream's node e2e resize specs expect.
	return res
}

// applyActual puts into res (allocated resources) what a running
// container or pod cgroup runs with, as upstream's status reports it: the
// CPU limit and memory limit into res.Limits, the CPU request into
// res.Requests (a nil list is left nil); a CPU value at or below the
// smallest quota or shares, as is the allocated one, leaves the
// allocation's; a value not known (nil) is prev's, the previous status's
// resources, when it has one.
func applyActual(res, prev *v1.ResourceRequirements, cpuReq, cpuLim, memLim *resource.Quantity) {
	set := func(dst v1.ResourceList, name v1.ResourceName, q *resource.Quantity, smallest int64, from func() v1.ResourceList) {
		switch {
		case q != nil:
			if smallest == 0 || q.MilliValue() > smallest || dst.Name(name, resource.DecimalSI).MilliValue() > smallest {
				dst[name] = q.DeepCopy()
			}
		case prev != nil:
			keepPrevious(dst, name, from())
		}
	}
	limits := func() v1.ResourceList { return prev.Limits }
	if res.Limits != nil {
		set(res.Limits, v1.ResourceCPU, cpuLim, minMilliCPULimit, limits)
		set(res.Limits, v1.ResourceMemory, memLim, 0, limits)
	}
	if res.Requests != nil {
		set(res.Requests, v1.ResourceCPU, cpuReq, minMilliShares, func() v1.ResourceList { return prev.Requests })
	}
}

// keepPrevious copies name from a previous status's list into dst, if it
// is there.
func keepPrevious(dst v1.ResourceList, name v1.ResourceName, prev v1.ResourceList) {
	if q, ok := prev[name]; ok {
		dst[name] = q.DeepCopy()
	}
}

// podResources are a pod's pod-level status.allocatedResources and
// status.resources as upstream reports them (InPlacePodLevelResources-
// VerticalScaling, beta and on by default): the allocated pod's effective
// requests (nil when there are none); and its resources: for a pod whose
// API status is not Running, the pod-level resources as allocated with
// the effective requests and limits; for a running one, the pod-level
// resources as allocated with the CPU request and limit and the memory
// limit its cgroup has (cg), each falling back to the previous status's
// when the cgroup gives none, and the memory request the effective one
// unless the previous status of a running pod had one, which stands.
func podResources(pod *v1.Pod, cg *v1.ResourceRequirements, old *v1.PodStatus) (v1.ResourceList, *v1.ResourceRequirements) {
	reqs := podspec.Requests(pod)
	allocated := reqs
	if len(allocated) == 0 {
		allocated = nil
	}
	res := pod.Spec.Resources.DeepCopy()
	if res == nil {
		res = &v1.ResourceRequirements{}
	}
	if pod.Status.Phase != v1.PodRunning {
		res.Requests, res.Limits = reqs.DeepCopy(), podspec.Limits(pod)
		return allocated, res
	}
	if res.Requests == nil {
		res.Requests = v1.ResourceList{}
	}
	if res.Limits == nil {
		res.Limits = v1.ResourceList{}
	}
	var prev *v1.ResourceRequirements
	if old.Phase == v1.PodRunning && old.Resources != nil {
		prev = old.Resources
	}
	var cpuReq, cpuLim, memLim *resource.Quantity
	if cg != nil {
		cpuReq, cpuLim, memLim = quantity(cg.Requests, v1.ResourceCPU), quantity(cg.Limits, v1.ResourceCPU), quantity(cg.Limits, v1.ResourceMemory)
	}
	applyActual(res, prev, cpuReq, cpuLim, memLim)
	if _, ok := res.Requests[v1.ResourceMemory]; !ok {
		if q, ok := reqs[v1.ResourceMemory]; ok {
			res.Requests[v1.ResourceMemory] = q.DeepCopy()
		}
	}
	// As upstream's: the cgroup keeps no memory request, the previous one
	// stands.
	if prev != nil {
		keepPrevious(res.Requests, v1.ResourceMemory, prev.Requests)
	}
	return allocated, res
}

// quantity is l's value of name, nil when it has none.
func quantity(l v1.ResourceList, name v1.ResourceName) *resource.Quantity {
	if q, ok := l[name]; ok {
		return &q
	}
	return nil
}

// runtimeResources reads what a runtime reports a container runs with, in
// the API's units: the CPU request from the shares (rounded up), the CPU
// limit from the CFS quota and period, the memory limit in bytes. Each is
// nil when the runtime reports nothing for it.
func runtimeResources(l *runtimeapi.LinuxContainerResources) (cpuReq, cpuLim, memLim *resource.Quantity) {
	if l == nil {
		return nil, nil, nil
	}
	if l.GetCpuPeriod() > 0 && l.GetCpuQuota() > 0 {
		if m := l.GetCpuQuota() * 1000 / l.GetCpuPeriod(); m > 0 {
			cpuLim = resource.NewMilliQuantity(m, resource.DecimalSI)
		}
	}
	if s := l.GetCpuShares(); s >= 2 {
		cpuReq = resource.NewMilliQuantity((s*1000+sharesPerCPU-1)/sharesPerCPU, resource.DecimalSI)
	}
	if m := l.GetMemoryLimitInBytes(); m > 0 {
		memLim = resource.NewQuantity(m, resource.BinarySI)
	}
	return cpuReq, cpuLim, memLim
}
