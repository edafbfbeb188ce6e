package eviction

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// FsStatsType names a part of a pod's disk usage.
type FsStatsType string

// The parts of a pod's disk usage, as upstream.
const (
	// FsStatsRoot is the containers' writable layers.
	FsStatsRoot FsStatsType = "root"
	// FsStatsLogs is the containers' logs.
	FsStatsLogs FsStatsType = "logs"
	// FsStatsLocalVolumeSource is the pod's local volumes (emptyDir not
	// in memory, hostPath, configMap, gitRepo).
	FsStatsLocalVolumeSource FsStatsType = "localVolumeSource"
)

// RankFunc orders pods for eviction in place, the first to evict first.
type RankFunc func(pods []*v1.Pod, stats StatsFunc)

// rankKey is what a ranking compares, computed once per pod.
type rankKey struct {
	pod      *v1.Pod
	noStats  bool  // pods without stats go first
	exceeds  bool  // usage above requests goes first
	priority int32 // lower goes first
	usage    int64 // more goes first (usage above request, or processes)
	idx      int   // the input position: ties keep their order
}

func sortKeys(pods []*v1.Pod, keys []rankKey, compare func(a, b rankKey) int) {
	for i := range keys {
		keys[i].idx = i
	}
	slices.SortFunc(keys, compare)
	for i := range keys {
		pods[i] = keys[i].pod
	}
}

func cmpFirst(a, b bool) int { // true before false
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func byExceedsPriorityUsage(a, b rankKey) int {
	if c := cmpFirst(a.noStats, b.noStats); c != 0 {
		return c
	}
	if c := cmpFirst(a.exceeds, b.exceeds); c != 0 {
		return c
	}
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(b.usage, a.usage); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// RankMemoryPressure orders pods for memory pressure as upstream: pods
// without stats first, then pods whose working set exceeds their memory
// request, then by priority (lowest first), then by working set above the
// request (largest first). Ties keep their order.
func RankMemoryPressure(pods []*v1.Pod, statsFn StatsFunc) {
	keys := make([]rankKey, len(pods))
	for i, p := range pods {
		k := rankKey{pod: p, priority: podPriority(p)}
		ps, ok := statsFn(p)
		if !ok {
			k.noStats = true
		} else {
			var usage int64
			if ps.Memory != nil {
				usage = int64(ps.Memory.WorkingSetBytes)
			}
			req := podRequest(p, v1.ResourceMemory)
			k.exceeds = usage > req
			k.usage = usage - req
		}
		keys[i] = k
	}
	sortKeys(pods, keys, byExceedsPriorityUsage)
}

// RankDiskPressure orders pods for disk pressure as upstream: pods without
// stats first, then pods whose usage of resource (v1.ResourceEphemeralStorage
// for bytes, "inodes" for inodes) over the measured parts exceeds their
// request, then by priority, then by usage above the request.
func RankDiskPressure(pods []*v1.Pod, statsFn StatsFunc, measure []FsStatsType, resource v1.ResourceName) {
	keys := make([]rankKey, len(pods))
	for i, p := range pods {
		k := rankKey{pod: p, priority: podPriority(p)}
		ps, ok := statsFn(p)
		if !ok {
			k.noStats = true
		} else {
			bytes, inodes := podDiskUsage(ps, p, measure)
			usage, req := bytes, podRequest(p, v1.ResourceEphemeralStorage)
			if resource == resourceInodes {
				usage, req = inodes, 0
			}
			k.exceeds = usage > req
			k.usage = usage - req
		}
		keys[i] = k
	}
	sortKeys(pods, keys, byExceedsPriorityUsage)
}

// RankPIDPressure orders pods for PID pressure as upstream: by priority
// (lowest first), then pods without stats, then by process count (largest
// first).
func RankPIDPressure(pods []*v1.Pod, statsFn StatsFunc) {
	keys := make([]rankKey, len(pods))
	for i, p := range pods {
		k := rankKey{pod: p, priority: podPriority(p)}
		ps, ok := statsFn(p)
		if !ok {
			k.noStats = true
		} else if ps.ProcessCount != nil {
			k.usage = int64(*ps.ProcessCount)
		}
		keys[i] = k
	}
	sortKeys(pods, keys, byPriorityProcesses)
}

func byPriorityProcesses(a, b rankKey) int {
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := cmpFirst(a.noStats, b.noStats); c != 0 {
		return c
	}
	if c := cmp.Compare(b.usage, a.usage); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// diskMeasure returns the parts of pod disk usage that count against a disk
// signal, as upstream. With a dedicated image filesystem that also holds
// the writable layers, nodefs counts logs and local volumes, and imagefs and
// containerfs the writable layers. With the writable layers split from a
// dedicated image filesystem (on nodefs), nodefs and containerfs count all
// three and imagefs none (the images are no pod's: pods rank by priority and
// request alone). Otherwise every disk signal counts all three.
func diskMeasure(sig Signal, dedicatedImageFs, splitContainerFs bool) []FsStatsType {
	all := []FsStatsType{FsStatsRoot, FsStatsLogs, FsStatsLocalVolumeSource}
	if !dedicatedImageFs {
		return all
	}
	image := sig == SignalImageFsAvailable || sig == SignalImageFsInodesFree
	container := sig == SignalContainerFsAvailable || sig == SignalContainerFsInodesFree
	switch {
	case splitContainerFs && image:
		return nil
	case splitContainerFs:
		return all
	case image || container:
		return []FsStatsType{FsStatsRoot}
	}
	return []FsStatsType{FsStatsLogs, FsStatsLocalVolumeSource}
}

// RankFor returns upstream's ranking for a signal on the node's disks; nil
// for an unknown signal.
func RankFor(sig Signal, dedicatedImageFs, splitContainerFs bool) RankFunc {
	switch sig {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return RankMemoryPressure
	case SignalPIDAvailable:
		return RankPIDPressure
	case SignalNodeFsAvailable, SignalImageFsAvailable, SignalNodeFsInodesFree, SignalImageFsInodesFree,
		SignalContainerFsAvailable, SignalContainerFsInodesFree:
		m, res := diskMeasure(sig, dedicatedImageFs, splitContainerFs), signalInfo[sig].resource
		return func(pods []*v1.Pod, statsFn StatsFunc) { RankDiskPressure(pods, statsFn, m, res) }
	}
	return nil
}

func podPriority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func has(m []FsStatsType, t FsStatsType) bool { return slices.Contains(m, t) }

// podDiskUsage sums the measured parts of a pod's disk usage: bytes and
// inodes.
func podDiskUsage(ps *stats.PodStats, p *v1.Pod, measure []FsStatsType) (bytes, inodes int64) {
	add := func(f *stats.FsStats) {
		if f != nil {
			bytes += int64(f.UsedBytes)
			inodes += int64(f.InodesUsed)
		}
	}
	root, logs := has(measure, FsStatsRoot), has(measure, FsStatsLogs)
	for i := range ps.Containers {
		if root {
			add(ps.Containers[i].Rootfs)
		}
		if logs {
			add(ps.Containers[i].Logs)
		}
	}
	if has(measure, FsStatsLocalVolumeSource) {
		for _, v := range p.Spec.Volumes {
			if !isLocalVolume(&v) {
				continue
			}
			for j := range ps.Volumes {
				if ps.Volumes[j].Name == v.Name {
					add(&ps.Volumes[j].FsStats)
					break
				}
			}
		}
	}
	return bytes, inodes
}

// isLocalVolume reports whether a volume's data lives on the node's disk and
// counts as the pod's ephemeral storage, as upstream.
func isLocalVolume(v *v1.Volume) bool {
	return v.HostPath != nil || (v.EmptyDir != nil && v.EmptyDir.Medium != v1.StorageMediumMemory) || v.ConfigMap != nil || v.GitRepo != nil //nolint:staticcheck // GitRepo counts as upstream
}

// podRequest is the pod's effective request of a resource: the larger of
// the sum over its containers and sidecars and what any init container needs
// (its request plus the sidecars started before it), plus the pod overhead.
func podRequest(p *v1.Pod, res v1.ResourceName) int64 {
	req := func(c *v1.Container) int64 {
		if q, ok := c.Resources.Requests[res]; ok {
			return q.Value()
		}
		return 0
	}
	var sum, sidecars, initMax int64
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if podspec.IsSidecar(c) {
			sidecars += req(c)
			continue
		}
		initMax = max(initMax, sidecars+req(c))
	}
	for i := range p.Spec.Containers {
		sum += req(&p.Spec.Containers[i])
	}
	total := max(sum+sidecars, initMax)
	if q, ok := p.Spec.Overhead[res]; ok && total > 0 {
		total += q.Value()
	}
	return total
}

// podLimit is the pod's effective limit of a resource (as podRequest, with
// limits, keeping the limits' format for messages) and whether any container
// sets one.
func podLimit(p *v1.Pod, res v1.ResourceName) (resource.Quantity, bool) {
	found := false
	lim := func(c *v1.Container) resource.Quantity {
		if q, ok := c.Resources.Limits[res]; ok {
			found = true
			return q.DeepCopy()
		}
		return resource.Quantity{}
	}
	var sum, sidecars, initMax resource.Quantity
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if podspec.IsSidecar(c) {
			sidecars.Add(lim(c))
			continue
		}
		need := sidecars.DeepCopy()
		need.Add(lim(c))
		if need.Cmp(initMax) > 0 {
			initMax = need
		}
	}
	for i := range p.Spec.Containers {
		sum.Add(lim(&p.Spec.Containers[i]))
	}
	sum.Add(sidecars)
	if initMax.Cmp(sum) > 0 {
		return initMax, found
	}
	return sum, found
}
