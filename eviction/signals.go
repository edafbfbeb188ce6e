package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// Observation is the value of one signal at one moment.
type Observation struct {
	// Available is the amount left (bytes, inodes or processes).
	Available int64
	// Capacity is the total, which percentages are taken of.
	Capacity int64
	// Time is when the underlying stats were taken (zero if unknown).
	Time time.Time
}

// Observations holds the signals a summary gives. A signal with no stats
// behind it is absent, and no threshold on it can be met.
type Observations map[Signal]Observation

// Observe derives the signals from a summary, as upstream: memory from the
// node's available and working-set bytes (capacity = their sum), the
// allocatable memory from the pods' cgroup, filesystem bytes and inodes from
// nodefs, imagefs and containerfs (the image filesystem when the summary has
// no container filesystem of its own, as upstream's summary reports it), and
// PIDs from the process limit.
func Observe(s *stats.Summary) Observations {
	obs := Observations{}
	if s == nil {
		return obs
	}
	n := &s.Node
	if m := n.Memory; m != nil {
		obs[SignalMemoryAvailable] = Observation{Available: int64(m.AvailableBytes), Capacity: int64(m.AvailableBytes + m.WorkingSetBytes), Time: m.Time}
	}
	if m := n.AllocatableMemory; m != nil {
		obs[SignalAllocatableMemoryAvailable] = Observation{Available: int64(m.AvailableBytes), Capacity: int64(m.AvailableBytes + m.WorkingSetBytes), Time: m.Time}
	}
	fs := func(f *stats.FsStats, bytes, inodes Signal) {
		if f == nil {
			return
		}
		if f.CapacityBytes > 0 {
			obs[bytes] = Observation{Available: int64(f.AvailableBytes), Capacity: int64(f.CapacityBytes), Time: f.Time}
		}
		if f.Inodes > 0 {
			obs[inodes] = Observation{Available: int64(f.InodesFree), Capacity: int64(f.Inodes), Time: f.Time}
		}
	}
	fs(n.Fs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	fs(n.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
	if n.ContainerFs != nil {
		fs(n.ContainerFs, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	} else {
		fs(n.ImageFs, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	}
	if r := n.Rlimit; r != nil && r.MaxPID > 0 {
		avail := int64(r.MaxPID) - int64(r.NumOfRunningProcesses)
		obs[SignalPIDAvailable] = Observation{Available: avail, Capacity: int64(r.MaxPID), Time: r.Time}
	}
	return obs
}

// StatsFunc returns the stats of a pod, if there are any.
type StatsFunc func(pod *v1.Pod) (*stats.PodStats, bool)

// PodStatsFunc indexes the pods of a summary by UID.
func PodStatsFunc(s *stats.Summary) StatsFunc {
	if s == nil {
		return func(*v1.Pod) (*stats.PodStats, bool) { return nil, false }
	}
	byUID := make(map[types.UID]*stats.PodStats, len(s.Pods))
	for i := range s.Pods {
		byUID[s.Pods[i].UID] = &s.Pods[i]
	}
	return func(pod *v1.Pod) (*stats.PodStats, bool) {
		ps, ok := byUID[pod.UID]
		return ps, ok
	}
}

// IsMet reports whether t is met by obs: the available amount is below the
// threshold, or, with enforceMinReclaim, below the threshold plus its
// minimum reclaim. A signal without an observation is never met.
func (t Threshold) IsMet(obs Observations, enforceMinReclaim bool) bool {
	o, ok := obs[t.Signal]
	if !ok {
		return false
	}
	q := t.Value.amount(o.Capacity)
	if enforceMinReclaim && t.MinReclaim != nil {
		q += t.MinReclaim.amount(o.Capacity)
	}
	return q > o.Available
}

// quantity returns the threshold in the signal's unit, for messages.
func (t Threshold) quantity(obs Observations) (int64, bool) {
	o, ok := obs[t.Signal]
	if !ok {
		return 0, false
	}
	return t.Value.amount(o.Capacity), true
}

// thresholdsMet returns the indexes in ts (among idx) of the thresholds obs
// meets.
func thresholdsMet(ts []Threshold, idx []int, obs Observations, enforceMinReclaim bool) []int {
	var out []int
	for _, i := range idx {
		if ts[i].IsMet(obs, enforceMinReclaim) {
			out = append(out, i)
		}
	}
	return out
}

// mergeIdx returns the sorted union of a and b.
func mergeIdx(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// conditionsOf returns the node conditions the thresholds set, in the order
// MemoryPressure, DiskPressure, PIDPressure.
func conditionsOf(ts []Threshold, idx []int) []v1.NodeConditionType {
	var mem, disk, pid bool
	for _, i := range idx {
		switch signalInfo[ts[i].Signal].condition {
		case v1.NodeMemoryPressure:
			mem = true
		case v1.NodeDiskPressure:
			disk = true
		case v1.NodePIDPressure:
			pid = true
		}
	}
	var out []v1.NodeConditionType
	if mem {
		out = append(out, v1.NodeMemoryPressure)
	}
	if disk {
		out = append(out, v1.NodeDiskPressure)
	}
	if pid {
		out = append(out, v1.NodePIDPressure)
	}
	return out
}
