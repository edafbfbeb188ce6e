package stats

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// timeOf converts a CRI timestamp (nanoseconds since the epoch).
func timeOf(ns int64) metav1.Time { return metav1.NewTime(time.Unix(0, ns)) }

// valueOf unwraps a CRI number; nil stays nil.
func valueOf(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	n := v.GetValue()
	return &n
}

// zeroIfNil unwraps a CRI number, nil as zero.
func zeroIfNil(v *runtimeapi.UInt64Value) *uint64 {
	n := v.GetValue()
	return &n
}

func psiOf(p *runtimeapi.PsiStats) *statsv1alpha1.PSIStats {
	if p == nil {
		return nil
	}
	data := func(d *runtimeapi.PsiData) statsv1alpha1.PSIData {
		return statsv1alpha1.PSIData{Total: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
	}
	return &statsv1alpha1.PSIStats{Full: data(p.GetFull()), Some: data(p.GetSome())}
}

// memoryOf converts CRI memory usage; with zero, what the runtime left out
// is zero rather than nil (a container's, as upstream's).
func memoryOf(m *runtimeapi.MemoryUsage, zero bool) *statsv1alpha1.MemoryStats {
	v := valueOf
	if zero {
		v = zeroIfNil
	}
	return &statsv1alpha1.MemoryStats{
		Time:            timeOf(m.GetTimestamp()),
		AvailableBytes:  v(m.GetAvailableBytes()),
		UsageBytes:      v(m.GetUsageBytes()),
		WorkingSetBytes: v(m.GetWorkingSetBytes()),
		RSSBytes:        v(m.GetRssBytes()),
		PageFaults:      v(m.GetPageFaults()),
		MajorPageFaults: v(m.GetMajorPageFaults()),
		PSI:             psiOf(m.GetPsi()),
	}
}

func interfaceOf(i *runtimeapi.NetworkInterfaceUsage) statsv1alpha1.InterfaceStats {
	return statsv1alpha1.InterfaceStats{
		Name:     i.GetName(),
		RxBytes:  valueOf(i.GetRxBytes()),
		RxErrors: valueOf(i.GetRxErrors()),
		TxBytes:  valueOf(i.GetTxBytes()),
		TxErrors: valueOf(i.GetTxErrors()),
	}
}

// add returns a+b where nil is nothing: nil only when both are.
func add(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	s := *a + *b
	return &s
}

// later returns the later of two times.
func later(a, b metav1.Time) metav1.Time {
	if a.Before(&b) {
		return b
	}
	return a
}

// addPodCPUAndMemory adds a container's CPU and memory to its pod's, for a
// pod measured from its containers alone (the pod's time is its last
// container's, as upstream's).
func addPodCPUAndMemory(ps *statsv1alpha1.PodStats, cs *statsv1alpha1.ContainerStats) {
	if c := cs.CPU; c != nil {
		if ps.CPU == nil {
			ps.CPU = &statsv1alpha1.CPUStats{UsageNanoCores: new(uint64), UsageCoreNanoSeconds: new(uint64)}
		}
		ps.CPU.Time = c.Time
		*ps.CPU.UsageCoreNanoSeconds += deref(c.UsageCoreNanoSeconds)
		*ps.CPU.UsageNanoCores += deref(c.UsageNanoCores)
	}
	if m := cs.Memory; m != nil {
		if ps.Memory == nil {
			z := func() *uint64 { return new(uint64) }
			ps.Memory = &statsv1alpha1.MemoryStats{AvailableBytes: z(), UsageBytes: z(), WorkingSetBytes: z(), RSSBytes: z(), PageFaults: z(), MajorPageFaults: z()}
		}
		pm := ps.Memory
		pm.Time = m.Time
		*pm.AvailableBytes += deref(m.AvailableBytes)
		*pm.UsageBytes += deref(m.UsageBytes)
		*pm.WorkingSetBytes += deref(m.WorkingSetBytes)
		*pm.RSSBytes += deref(m.RSSBytes)
		*pm.PageFaults += deref(m.PageFaults)
		*pm.MajorPageFaults += deref(m.MajorPageFaults)
	}
}

// sumSwap is a pod's swap, the sum of its containers' (the CRI has no
// pod-level swap); nil when none reports any.
func sumSwap(cs []statsv1alpha1.ContainerStats) *statsv1alpha1.SwapStats {
	var out *statsv1alpha1.SwapStats
	for _, c := range cs {
		if c.Swap == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.SwapStats{SwapUsageBytes: new(uint64), SwapAvailableBytes: new(uint64)}
		}
		out.Time = later(out.Time, c.Swap.Time)
		*out.SwapUsageBytes += deref(c.Swap.SwapUsageBytes)
		*out.SwapAvailableBytes += deref(c.Swap.SwapAvailableBytes)
	}
	return out
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func sortContainers(cs []statsv1alpha1.ContainerStats) {
	slices.SortFunc(cs, func(a, b statsv1alpha1.ContainerStats) int { return cmp.Compare(a.Name, b.Name) })
}
