package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// localStorageEvictions returns, each with no grace period, every pod
// whose emptyDir usage exceeds its sizeLimit, whose ephemeral storage
// exceeds the sum of its containers' limits, or with a container over its
// own ephemeral-storage limit, as upstream. Critical pods are spared.
func localStorageEvictions(in Input) []Eviction {
	var out []Eviction
	for _, pod := range in.Pods {
		ps, ok := in.Stats(pod)
		if !ok || podspec.IsCritical(pod) {
			continue
		}
		if msg, sig := localStorageViolation(pod, ps, in.DedicatedImageFs); msg != "" {
			out = append(out, Eviction{Pod: pod, Signal: sig, Message: msg})
		}
	}
	return out
}

// LocalStorageViolation returns the eviction message for a pod over one of
// its local storage limits, or "" if it is within them: an emptyDir over
// its sizeLimit, the pod's ephemeral storage (logs and local volumes, and
// writable layers unless the image filesystem is dedicated) over the sum
// of its containers' limits, or a container's logs (and writable layer,
// likewise) over its own limit.
func LocalStorageViolation(pod *v1.Pod, ps *stats.PodStats, dedicatedImageFs bool) string {
	msg, _ := localStorageViolation(pod, ps, dedicatedImageFs)
	return msg
}

// The signals of local storage evictions, as upstream counts them in
// kubelet_evictions.
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// localStorageViolation returns the eviction message of the pod's first
// local storage limit exceeded and its signal, or "".
func localStorageViolation(pod *v1.Pod, ps *stats.PodStats, dedicated bool) (string, Signal) {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		for j := range ps.Volumes {
			if ps.Volumes[j].Name == v.Name && int64(ps.Volumes[j].UsedBytes) > v.EmptyDir.SizeLimit.Value() {
				return fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String()), SignalEmptyDirFsLimit
			}
		}
	}
	if limit, ok := podLimit(pod, v1.ResourceEphemeralStorage); ok {
		measure := []FsStatsType{FsStatsRoot, FsStatsLogs, FsStatsLocalVolumeSource}
		if dedicated {
			measure = measure[1:]
		}
		if used, _ := podDiskUsage(ps, pod, measure); used > limit.Value() {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String()), SignalEphemeralPodFsLimit
		}
	}
	limits := map[string]resource.Quantity{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if q, ok := cs[i].Resources.Limits[v1.ResourceEphemeralStorage]; ok {
				limits[cs[i].Name] = q
			}
		}
	}
	for _, c := range ps.Containers {
		limit, ok := limits[c.Name]
		if !ok {
			continue
		}
		var used int64
		if c.Logs != nil {
			used += int64(c.Logs.UsedBytes)
		}
		if !dedicated && c.Rootfs != nil {
			used += int64(c.Rootfs.UsedBytes)
		}
		if used > limit.Value() {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String()), SignalEphemeralContainerFsLimit
		}
	}
	return "", ""
}
