package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
	keep := func(name v1.ResourceName, dst v1.ResourceList, from func(*v1.ResourceRequirements) v1.ResourceList) {
		if prev == nil {
			return
		}
		if q, ok := from(prev)[name]; ok {
			dst[name] = q.DeepCopy()
		}
	}
	limits := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }
	requests := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }
	cpuReq, cpuLim, memLim := runtimeResources(cs.GetResources().GetLinux())
	if res.Limits != nil {
		if cpuLim != nil {
			if cpuLim.MilliValue() > minMilliCPULimit || res.Limits.Cpu().MilliValue() > minMilliCPULimit {
				res.Limits[v1.ResourceCPU] = *cpuLim
			}
		} else {
			keep(v1.ResourceCPU, res.Limits, limits)
		}
		if memLim != nil {
			res.Limits[v1.ResourceMemory] = *memLim
		} else {
			keep(v1.ResourceMemory, res.Limits, limits)
		}
	}
	if res.Requests != nil {
		if cpuReq != nil {
			if cpuReq.MilliValue() > minMilliShares || res.Requests.Cpu().MilliValue() > minMilliShares {
				res.Requests[v1.ResourceCPU] = *cpuReq
			}
		} else {
			keep(v1.ResourceCPU, res.Requests, requests)
		}
		// The runtime never reports a memory request: the allocation's
		// stands, as upstream's node e2e resize specs expect.
	}
	return res
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
