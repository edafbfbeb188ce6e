package cgroups

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxResources is what the runtime is told of a pod's resources after
// an in-place resize (CRI UpdatePodSandboxResources), as upstream's
// kubelet tells it: overhead is the pod's overhead (spec.overhead) taken as
// guaranteed (CPU shares from it, a CFS quota over opts' period, its
// memory as the limit; empty when the pod has none), and resources is the
// pod's cgroup (PodConfig) less that overhead. It is a pure function of the
// pod and opts.
func SandboxResources(pod *v1.Pod, opts PodOptions) (overhead, resources *runtimeapi.LinuxContainerResources) {
	period := opts.CPUPeriod
	if period == 0 {
		period = QuotaPeriod
	}
	rc := PodConfig(pod, opts)
	overhead = &runtimeapi.LinuxContainerResources{}
	var ovCPU, ovMem int64
	if pod.Spec.Overhead != nil {
		ovCPU = pod.Spec.Overhead.Cpu().MilliValue()
		ovMem = pod.Spec.Overhead.Memory().Value()
		overhead.CpuShares = int64(MilliCPUToShares(ovCPU))
		overhead.CpuPeriod = int64(period)
		overhead.CpuQuota = MilliCPUToQuota(ovCPU, int64(period))
		overhead.MemoryLimitInBytes = ovMem
	}
	resources = &runtimeapi.LinuxContainerResources{}
	if rc.CPUShares != nil {
		shares := *rc.CPUShares
		if ovCPU > 0 {
			shares = MilliCPUToShares(sharesToMilliCPU(int64(shares)) - ovCPU)
		}
		resources.CpuShares = int64(shares)
	}
	if rc.CPUPeriod != nil {
		resources.CpuPeriod = int64(*rc.CPUPeriod)
		if rc.CPUQuota != nil {
			resources.CpuQuota = *rc.CPUQuota - MilliCPUToQuota(ovCPU, int64(*rc.CPUPeriod))
		}
	}
	if rc.Memory != nil {
		resources.MemoryLimitInBytes = *rc.Memory - ovMem
	}
	return overhead, resources
}

// SandboxResources is the package function with the Manager's pod
// options, what cri/podsync sends the runtime after a resize.
func (m *Manager) SandboxResources(pod *v1.Pod) (overhead, resources *runtimeapi.LinuxContainerResources) {
	return SandboxResources(pod, m.podOptions(pod))
}
