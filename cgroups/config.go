package cgroups

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// The kernel's bounds and upstream's units for CPU.
const (
	// MinShares and MaxShares bound cpu.shares (cgroup v1).
	MinShares = 2
	MaxShares = 262144
	// SharesPerCPU is the shares of one CPU.
	SharesPerCPU = 1024
	// QuotaPeriod is the CFS period, 100ms in µs (upstream's
	// cpuCFSQuotaPeriod default).
	QuotaPeriod = 100000
	// MinQuota is the smallest CFS quota, 1ms in µs.
	MinQuota = 1000
)

// ResourceConfig is what is written to one cgroup; a nil field is left as
// the cgroup has it. Memory is in bytes, the CPU quota and period in µs.
type ResourceConfig struct {
	CPUShares *uint64
	CPUQuota  *int64
	CPUPeriod *uint64
	Memory    *int64
	PidsLimit *int64
	// HugePageLimits maps a huge page size in bytes to a limit in bytes.
	HugePageLimits map[int64]int64
}

// MilliCPUToShares converts millicores to cpu.shares: 1024 a CPU, at least
// MinShares (zero too: the kernel's meaning of nothing), at most MaxShares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	return uint64(min(max(milliCPU*SharesPerCPU/1000, MinShares), MaxShares))
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota over
// period (µs): 0 for no limit, else at least MinQuota.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	return max(milliCPU*period/1000, MinQuota)
}

// SharesToWeight maps cgroup v1 cpu.shares [2, 262144] onto cgroup v2
// cpu.weight [1, 10000] linearly, as upstream does.
func SharesToWeight(shares uint64) uint64 {
	if shares >= MaxShares {
		return 10000
	}
	if shares < MinShares {
		shares = MinShares
	}
	return 1 + (shares-MinShares)*9999/(MaxShares-MinShares)
}

// PodOptions are the node's settings that PodConfig reads.
type PodOptions struct {
	// DisableCPUQuota leaves CPU limits unenforced (upstream's
	// cpuCFSQuota: false): the pod's quota is -1.
	DisableCPUQuota bool
	// CPUPeriod is the CFS period in µs; 0 means QuotaPeriod.
	CPUPeriod uint64
	// PidsLimit is the pod's pids limit (upstream's podPidsLimit); 0 or
	// less means none.
	PidsLimit int64
	// HugePageSizes are the huge page sizes, in bytes, the node's kernel
	// offers (status/node.LocalMachine's hugepages-<size> capacity): a
	// pod's cgroup limits each size the pod does not request to 0, as
	// upstream's, so that it uses no huge pages it was not given. Empty:
	// only the sizes the pod requests are limited.
	HugePageSizes []int64
}

// PodConfig computes a pod's cgroup as upstream's ResourceConfigForPod:
// from the pod's effective requests and limits (containers, init
// containers and sidecars, pod-level resources, overhead), CPU shares for
// every class (MinShares for BestEffort); for Guaranteed pods a CFS quota
// and a memory limit always; for Burstable ones the quota only when every
// container limits CPU and the memory limit only when every container
// limits memory (or the pod does); huge page limits from the requests,
// 0 for each other size of opts.HugePageSizes.
// It is a pure function of the pod and opts.
func PodConfig(pod *v1.Pod, opts PodOptions) ResourceConfig {
	period := opts.CPUPeriod
	if period == 0 {
		period = QuotaPeriod
	}
	reqs := podspec.Requests(pod)
	limits, cpuDeclared, memDeclared := podLimits(pod)
	var cpuReq, cpuLim, memLim int64
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuReq = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceCPU]; ok {
		cpuLim = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceMemory]; ok {
		memLim = q.Value()
	}
	shares := MilliCPUToShares(cpuReq)
	quota := MilliCPUToQuota(cpuLim, int64(period))
	if opts.DisableCPUQuota {
		quota = -1
	}
	var rc ResourceConfig
	switch podspec.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &memLim
	case v1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuDeclared {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memDeclared {
			rc.Memory = &memLim
		}
	default:
		minShares := uint64(MinShares)
		rc.CPUShares = &minShares
	}
	rc.HugePageLimits = hugePageLimits(reqs)
	for _, size := range opts.HugePageSizes {
		if _, ok := rc.HugePageLimits[size]; !ok {
			if rc.HugePageLimits == nil {
				rc.HugePageLimits = map[int64]int64{}
			}
			rc.HugePageLimits[size] = 0
		}
	}
	if opts.PidsLimit > 0 {
		pids := opts.PidsLimit
		rc.PidsLimit = &pids
	}
	return rc
}

// podLimits sums the pod's limits as upstream's PodLimits does (regular
// containers and sidecars added, each init container with the sidecars
// before it, the larger of the two; pod-level limits over them; overhead
// added to the limits that are set), and says whether every container (an
// init container counted with its sidecars) limits CPU and memory, or the
// pod does at pod level.
func podLimits(pod *v1.Pod) (v1.ResourceList, bool, bool) {
	cpu, mem := true, true
	note := func(l v1.ResourceList) {
		if l.Cpu().IsZero() {
			cpu = false
		}
		if l.Memory().IsZero() {
			mem = false
		}
	}
	limits := podspec.EffectiveResources(pod, podspec.ContainerLimits, note)
	if r := pod.Spec.Resources; podspec.HasPodLevelResources(pod) {
		for name, q := range r.Limits {
			if podspec.IsPodLevelResource(name) {
				limits[name] = q.DeepCopy()
			}
		}
		if !r.Limits.Cpu().IsZero() {
			cpu = true
		}
		if !r.Limits.Memory().IsZero() {
			mem = true
		}
	}
	for name, q := range pod.Spec.Overhead {
		if cur, ok := limits[name]; ok && !cur.IsZero() {
			cur.Add(q)
			limits[name] = cur
		}
	}
	return limits, cpu, mem
}

// hugePageLimits maps the huge page sizes a resource list names
// (hugepages-2Mi) to their amounts in bytes.
func hugePageLimits(l v1.ResourceList) map[int64]int64 {
	var out map[int64]int64
	for name, q := range l {
		size, ok := podspec.HugePageSize(name)
		if !ok {
			continue
		}
		if out == nil {
			out = map[int64]int64{}
		}
		out[size] += q.Value()
	}
	return out
}

// NodeConfig is the kubepods cgroup's config for a node allocatable (or,
// without enforcement, capacity) list, as upstream's: its memory, CPU
// shares, pids ("pid") and huge pages; nil fields for what the list lacks.
func NodeConfig(allocatable v1.ResourceList) ResourceConfig {
	var rc ResourceConfig
	if q, ok := allocatable[v1.ResourceMemory]; ok {
		v := q.Value()
		rc.Memory = &v
	}
	if q, ok := allocatable[v1.ResourceCPU]; ok {
		v := MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &v
	}
	if q, ok := allocatable[ResourcePID]; ok {
		v := q.Value()
		rc.PidsLimit = &v
	}
	rc.HugePageLimits = hugePageLimits(allocatable)
	return rc
}

// ResourcePID is the resource name of process IDs in reservations and in
// the capacity the kubepods cgroup is limited to (upstream's "pid").
const ResourcePID v1.ResourceName = "pid"
