package eviction_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

func rankCase(pods []*v1.Pod, us map[string]usage) (eviction.StatsFunc, []*v1.Pod) {
	s := stats.Summary{}
	for _, p := range pods {
		if u, ok := us[p.Name]; ok {
			s.Pods = append(s.Pods, podStats(p, u))
		}
	}
	return eviction.PodStatsFunc(&s), append([]*v1.Pod(nil), pods...)
}

func TestRankMemoryPressure(t *testing.T) {
	cases := []struct {
		name  string
		pods  []*v1.Pod
		usage map[string]usage
		want  []string
	}{
		{
			name: "exceeding requests before priority before usage",
			pods: []*v1.Pod{
				newPod("guaranteed-high", request(v1.ResourceMemory, "1Gi"), priority(100)),
				newPod("besteffort-high", priority(100)),
				newPod("burstable-low-within", request(v1.ResourceMemory, "2Gi"), priority(0)),
				newPod("besteffort-low", priority(0)),
			},
			usage: map[string]usage{"guaranteed-high": {memory: 512 * Mi}, "besteffort-high": {memory: 900 * Mi}, "burstable-low-within": {memory: 1 * Gi}, "besteffort-low": {memory: 100 * Mi}},
			want:  []string{"besteffort-low", "besteffort-high", "burstable-low-within", "guaranteed-high"},
		},
		{
			name: "same priority: most above request first",
			pods: []*v1.Pod{
				newPod("a", request(v1.ResourceMemory, "100Mi")),
				newPod("b", request(v1.ResourceMemory, "1Gi")),
				newPod("c"),
			},
			usage: map[string]usage{"a": {memory: 300 * Mi}, "b": {memory: 1*Gi + 500*Mi}, "c": {memory: 250 * Mi}},
			want:  []string{"b", "c", "a"},
		},
		{
			name: "an init container's request counts when larger",
			pods: []*v1.Pod{
				func() *v1.Pod {
					p := newPod("init-heavy")
					p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: mustQty("2Gi")}}}}
					return p
				}(),
				newPod("plain", request(v1.ResourceMemory, "1Gi")),
			},
			usage: map[string]usage{"init-heavy": {memory: 1536 * Mi}, "plain": {memory: 1100 * Mi}},
			want:  []string{"plain", "init-heavy"},
		},
		{
			name:  "pods without stats first",
			pods:  []*v1.Pod{newPod("measured"), newPod("unknown", priority(1000))},
			usage: map[string]usage{"measured": {memory: 1 * Gi}},
			want:  []string{"unknown", "measured"},
		},
		{
			name:  "ties keep their order",
			pods:  []*v1.Pod{newPod("x"), newPod("y"), newPod("z")},
			usage: map[string]usage{"x": {memory: Mi}, "y": {memory: Mi}, "z": {memory: Mi}},
			want:  []string{"x", "y", "z"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn, pods := rankCase(tc.pods, tc.usage)
			eviction.RankMemoryPressure(pods, fn)
			assert.Equal(t, tc.want, names(pods))
		})
	}
}

func TestRankDiskPressure(t *testing.T) {
	all := []eviction.FsStatsType{eviction.FsStatsRoot, eviction.FsStatsLogs, eviction.FsStatsLocalVolumeSource}
	cases := []struct {
		name    string
		pods    []*v1.Pod
		usage   map[string]usage
		measure []eviction.FsStatsType
		res     v1.ResourceName
		want    []string
	}{
		{
			name: "bytes: exceeding ephemeral requests, then priority, then usage",
			pods: []*v1.Pod{
				newPod("within", request(v1.ResourceEphemeralStorage, "10Gi")),
				newPod("small", priority(5)),
				newPod("big", priority(5)),
				newPod("volume-heavy", priority(5), emptyDir("scratch", "")),
			},
			usage:   map[string]usage{"within": {rootfs: 5 * Gi}, "small": {rootfs: 1 * Gi}, "big": {rootfs: 2 * Gi, logs: 1 * Gi}, "volume-heavy": {volumes: map[string]uint64{"scratch": 4 * Gi}}},
			measure: all, res: v1.ResourceEphemeralStorage,
			want: []string{"volume-heavy", "big", "small", "within"},
		},
		{
			name:    "dedicated imagefs, nodefs counts logs and volumes only",
			pods:    []*v1.Pod{newPod("layer-heavy"), newPod("log-heavy")},
			usage:   map[string]usage{"layer-heavy": {rootfs: 10 * Gi, logs: 1 * Mi}, "log-heavy": {rootfs: 1 * Mi, logs: 1 * Gi}},
			measure: []eviction.FsStatsType{eviction.FsStatsLogs, eviction.FsStatsLocalVolumeSource}, res: v1.ResourceEphemeralStorage,
			want: []string{"log-heavy", "layer-heavy"},
		},
		{
			name:    "inodes",
			pods:    []*v1.Pod{newPod("few"), newPod("many")},
			usage:   map[string]usage{"few": {inodes: 10}, "many": {inodes: 10000}},
			measure: all, res: "inodes",
			want: []string{"many", "few"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn, pods := rankCase(tc.pods, tc.usage)
			eviction.RankDiskPressure(pods, fn, tc.measure, tc.res)
			assert.Equal(t, tc.want, names(pods))
		})
	}
}

func TestRankPIDPressure(t *testing.T) {
	pods := []*v1.Pod{newPod("hi-many", priority(10)), newPod("lo-few"), newPod("lo-many"), newPod("lo-unknown")}
	fn, ranked := rankCase(pods, map[string]usage{"hi-many": {procs: 1000}, "lo-few": {procs: 2}, "lo-many": {procs: 500}})
	eviction.RankPIDPressure(ranked, fn)
	assert.Equal(t, []string{"lo-unknown", "lo-many", "lo-few", "hi-many"}, names(ranked))
}

// TestRankFor pins which usage each disk signal ranks by on each layout of
// the runtime's filesystems, as upstream's buildSignalToRankFunc.
func TestRankFor(t *testing.T) {
	pods := []*v1.Pod{newPod("logs"), newPod("layers")}
	us := map[string]usage{"layers": {rootfs: 10 * Gi}, "logs": {logs: 1 * Gi}}
	byLayers, byLogs, asGiven := []string{"layers", "logs"}, []string{"logs", "layers"}, []string{"logs", "layers"}
	cases := []struct {
		sig              eviction.Signal
		dedicated, split bool
		want             []string
	}{
		// One disk: every signal counts everything.
		{eviction.SignalNodeFsAvailable, false, false, byLayers},
		{eviction.SignalImageFsAvailable, false, false, byLayers},
		{eviction.SignalContainerFsAvailable, false, false, byLayers},
		// A dedicated imagefs with the writable layers: nodefs counts
		// logs and volumes; imagefs and containerfs the layers.
		{eviction.SignalNodeFsAvailable, true, false, byLogs},
		{eviction.SignalImageFsAvailable, true, false, byLayers},
		{eviction.SignalContainerFsAvailable, true, false, byLayers},
		// The layers split from a dedicated imagefs, onto nodefs: nodefs
		// and containerfs count everything, imagefs nothing.
		{eviction.SignalNodeFsAvailable, true, true, byLayers},
		{eviction.SignalContainerFsAvailable, true, true, byLayers},
		{eviction.SignalImageFsAvailable, true, true, asGiven},
		{eviction.SignalImageFsInodesFree, true, true, asGiven},
		// Split from an imagefs on nodefs: as one disk.
		{eviction.SignalImageFsAvailable, false, true, byLayers},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/dedicated=%t/split=%t", tc.sig, tc.dedicated, tc.split), func(t *testing.T) {
			fn, ranked := rankCase(pods, us)
			eviction.RankFor(tc.sig, tc.dedicated, tc.split)(ranked, fn)
			assert.Equal(t, tc.want, names(ranked))
		})
	}
	assert.Nil(t, eviction.RankFor("cpu.available", false, false))
}
