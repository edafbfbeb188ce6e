package eviction_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/podspec"
	nodestatus "github.com/kubeletkit/kubeletkit/status/node"
)

// The manager feeds status/node's pressure conditions.
var _ nodestatus.Pressure = (*eviction.Manager)(nil)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	m      *eviction.Manager
	clk    *clocktesting.FakeClock
	stats  *evictiontest.Stats
	killer *evictiontest.Killer
	gc     *evictiontest.GC
	rec    *eventtest.Recorder
	pods   []*v1.Pod
}

func newHarness(t *testing.T, thresholds []eviction.Threshold, pods []*v1.Pod, s stats.Summary, mod ...func(*eviction.Options)) *harness {
	t.Helper()
	h := &harness{clk: clocktesting.NewFakeClock(t0), stats: &evictiontest.Stats{}, killer: &evictiontest.Killer{}, gc: &evictiontest.GC{}, rec: &eventtest.Recorder{}, pods: pods}
	h.stats.Set(s)
	o := eviction.Options{
		Thresholds: thresholds, Stats: h.stats, Pods: func() []*v1.Pod { return h.pods }, Killer: h.killer,
		ImageGC: h.gc, ContainerGC: h.gc, Clock: h.clk, Recorder: h.rec,
		NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"},
	}
	for _, f := range mod {
		f(&o)
	}
	m, err := eviction.New(o)
	require.NoError(t, err)
	h.m = m
	return h
}

func (h *harness) sync(t *testing.T) []string {
	t.Helper()
	evicted, err := h.m.Synchronize(context.Background())
	require.NoError(t, err)
	return names(evicted)
}

func mustParse(t *testing.T, hard, soft, grace, minReclaim string) []eviction.Threshold {
	t.Helper()
	ts, err := eviction.ParseThresholds(hard, soft, grace, minReclaim)
	require.NoError(t, err)
	return ts
}

func TestNewRequiresDependencies(t *testing.T) {
	ok := eviction.Options{Stats: &evictiontest.Stats{}, Pods: func() []*v1.Pod { return nil }, Killer: &evictiontest.Killer{}}
	cases := []struct {
		name string
		mod  func(*eviction.Options)
		want error
	}{
		{"stats", func(o *eviction.Options) { o.Stats = nil }, eviction.ErrMissingStats},
		{"pods", func(o *eviction.Options) { o.Pods = nil }, eviction.ErrMissingPods},
		{"killer", func(o *eviction.Options) { o.Killer = nil }, eviction.ErrMissingKiller},
		{"bad threshold", func(o *eviction.Options) { o.Thresholds = []eviction.Threshold{{Signal: "cpu.available"}} }, eviction.ErrInvalidThreshold},
		{"no value", func(o *eviction.Options) {
			o.Thresholds = []eviction.Threshold{{Signal: eviction.SignalMemoryAvailable}}
		}, eviction.ErrInvalidThreshold},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.mod(&o)
			_, err := eviction.New(o)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := eviction.New(ok)
	assert.NoError(t, err)
}

func TestObserve(t *testing.T) {
	n := healthyNode()
	n.memAvail, n.procs = 1*Gi, 32000
	s := summary(n)
	s.Node.AllocatableMemory = &stats.MemoryStats{AvailableBytes: 2 * Gi, WorkingSetBytes: 4 * Gi}
	obs := eviction.Observe(&s)
	assert.Equal(t, eviction.Observation{Available: 1 * Gi, Capacity: 8 * Gi}, obs[eviction.SignalMemoryAvailable])
	assert.Equal(t, eviction.Observation{Available: 2 * Gi, Capacity: 6 * Gi}, obs[eviction.SignalAllocatableMemoryAvailable])
	assert.Equal(t, eviction.Observation{Available: 50 * Gi, Capacity: 100 * Gi}, obs[eviction.SignalNodeFsAvailable])
	assert.Equal(t, eviction.Observation{Available: 900000, Capacity: 1000000}, obs[eviction.SignalNodeFsInodesFree])
	assert.Equal(t, eviction.Observation{Available: 768, Capacity: 32768}, obs[eviction.SignalPIDAvailable])
	// Without a container filesystem of its own, containerfs is imagefs.
	assert.Equal(t, obs[eviction.SignalImageFsAvailable], obs[eviction.SignalContainerFsAvailable])
	assert.Equal(t, obs[eviction.SignalImageFsInodesFree], obs[eviction.SignalContainerFsInodesFree])
	assert.Len(t, obs, 9)
	s.Node.ContainerFs = &stats.FsStats{AvailableBytes: 3 * Gi, CapacityBytes: 4 * Gi, InodesFree: 10, Inodes: 20}
	obs = eviction.Observe(&s)
	assert.Equal(t, eviction.Observation{Available: 3 * Gi, Capacity: 4 * Gi}, obs[eviction.SignalContainerFsAvailable])
	assert.Equal(t, eviction.Observation{Available: 10, Capacity: 20}, obs[eviction.SignalContainerFsInodesFree])
	s.Node.ContainerFs = nil

	// Missing parts give no signal; a filesystem without inodes no inode signal.
	s.Node.Memory, s.Node.Rlimit, s.Node.ImageFs.Inodes = nil, nil, 0
	obs = eviction.Observe(&s)
	assert.NotContains(t, obs, eviction.SignalMemoryAvailable)
	assert.NotContains(t, obs, eviction.SignalPIDAvailable)
	assert.NotContains(t, obs, eviction.SignalImageFsInodesFree)
	assert.Contains(t, obs, eviction.SignalImageFsAvailable)
	assert.Empty(t, eviction.Observe(nil))
}

func TestThresholdIsMet(t *testing.T) {
	obs := eviction.Observations{eviction.SignalMemoryAvailable: {Available: 150 * Mi, Capacity: 1 * Gi}}
	ts := mustParse(t, "memory.available<100Mi", "memory.available<20%", "memory.available=1m", "memory.available=100Mi")
	assert.False(t, ts[0].IsMet(obs, false), "150Mi available is not under 100Mi")
	assert.True(t, ts[0].IsMet(obs, true), "but it is under 100Mi + 100Mi min-reclaim")
	assert.True(t, ts[1].IsMet(obs, false), "150Mi is under 20%% of 1Gi")
	nodefs := mustParse(t, "nodefs.available<10%", "", "", "")[0]
	assert.False(t, nodefs.IsMet(obs, false), "no observation, never met")
}

func TestHardMemoryEvictsOnePodPerPass(t *testing.T) {
	pods := []*v1.Pod{
		newPod("guaranteed", request(v1.ResourceMemory, "2Gi"), limit(v1.ResourceMemory, "2Gi")),
		newPod("hog"),
		newPod("small"),
	}
	n := healthyNode()
	n.memAvail = 50 * Mi
	s := summary(n, podStats(pods[0], usage{memory: 1 * Gi}), podStats(pods[1], usage{memory: 3 * Gi}), podStats(pods[2], usage{memory: 200 * Mi}))
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, s)

	assert.Equal(t, []string{"hog"}, h.sync(t))
	kills := h.killer.Kills()
	require.Len(t, kills, 1)
	k := kills[0]
	assert.Equal(t, "hog", k.Name)
	assert.Equal(t, int64(1), *k.GracePeriod, "hard threshold: 1s grace")
	assert.Equal(t, v1.PodFailed, k.Status.Phase)
	assert.Equal(t, "Evicted", k.Status.Reason)
	wantMsg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 3Gi, request is 0, has larger consumption of memory. "
	assert.Equal(t, wantMsg, k.Status.Message)
	require.Len(t, k.Status.Conditions, 1)
	assert.Equal(t, v1.DisruptionTarget, k.Status.Conditions[0].Type)
	assert.Equal(t, v1.PodReasonTerminationByKubelet, k.Status.Conditions[0].Reason)
	assert.Equal(t, []string{"Warning EvictionThresholdMet Attempting to reclaim memory", "Warning Evicted " + wantMsg}, h.rec.Strings())
	assert.True(t, h.m.IsUnderMemoryPressure())
	assert.False(t, h.m.IsUnderDiskPressure())
	assert.Empty(t, h.gc.Calls(), "no node-level reclaim for memory")

	// Next pass: the pod is gone from the active list, still under pressure:
	// the next in rank, one pod only.
	h.pods = []*v1.Pod{pods[0], pods[2]}
	assert.Equal(t, []string{"small"}, h.sync(t))
	assert.Len(t, h.killer.Kills(), 2)
}

func TestCriticalAndStaticPodsAreNotEvicted(t *testing.T) {
	pods := []*v1.Pod{
		newPod("static", annotation("kubernetes.io/config.source", "file")),
		newPod("mirror", annotation("kubernetes.io/config.mirror", "abc")),
		newPod("critical", priority(podspec.SystemCriticalPriority)),
		newPod("api", annotation("kubernetes.io/config.source", "api")),
	}
	n := healthyNode()
	n.memAvail = 10 * Mi
	var ps []stats.PodStats
	for i, p := range pods {
		ps = append(ps, podStats(p, usage{memory: uint64(4-i) * Gi}))
	}
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, summary(n, ps...))
	assert.Equal(t, []string{"api"}, h.sync(t))

	h.pods = pods[:3]
	assert.Empty(t, h.sync(t), "only critical pods left")
	assert.Len(t, h.killer.Kills(), 1)
}

func TestSoftThresholdGracePeriod(t *testing.T) {
	pods := []*v1.Pod{newPod("a", grace(30)), newPod("b", grace(5))}
	n := healthyNode()
	n.memAvail = 500 * Mi
	s := summary(n, podStats(pods[0], usage{memory: 2 * Gi}), podStats(pods[1], usage{memory: 1 * Gi}))
	ts := mustParse(t, "memory.available<100Mi", "memory.available<1Gi", "memory.available=1m30s", "")
	h := newHarness(t, ts, pods, s, func(o *eviction.Options) { o.MaxPodGracePeriodSeconds = 10 })

	assert.Empty(t, h.sync(t), "soft threshold met, grace not over")
	assert.True(t, h.m.IsUnderMemoryPressure(), "the condition does not wait for the grace period")
	h.clk.Step(89 * time.Second)
	assert.Empty(t, h.sync(t))
	h.clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, h.sync(t))
	assert.Equal(t, int64(10), *h.killer.Kills()[0].GracePeriod, "min(max grace 10, pod's 30)")

	h.pods = pods[1:]
	assert.Equal(t, []string{"b"}, h.sync(t))
	assert.Equal(t, int64(5), *h.killer.Kills()[1].GracePeriod, "min(max grace 10, pod's 5)")

	// Pressure relieved then back: the grace period starts again.
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 4 * Gi })
	h.pods = pods
	assert.Empty(t, h.sync(t))
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 500 * Mi })
	h.clk.Step(time.Minute)
	assert.Empty(t, h.sync(t))
}

func TestPressureTransitionPeriod(t *testing.T) {
	n := healthyNode()
	n.memAvail = 50 * Mi
	n.procs = 32700
	h := newHarness(t, mustParse(t, "memory.available<100Mi,pid.available<100", "", "", ""), nil, summary(n))
	h.sync(t)
	assert.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodePIDPressure}, h.m.NodeConditions())

	h.stats.Update(func(s *stats.Summary) {
		s.Node.Memory.AvailableBytes = 4 * Gi
		s.Node.Rlimit.NumOfRunningProcesses = 100
	})
	for _, d := range []time.Duration{time.Second, 4*time.Minute + 58*time.Second} {
		h.clk.Step(d)
		h.sync(t)
		assert.True(t, h.m.IsUnderMemoryPressure(), "still within 5m of the last time it was met")
		assert.True(t, h.m.IsUnderPIDPressure())
	}
	h.clk.Step(time.Second)
	h.sync(t)
	assert.Empty(t, h.m.NodeConditions())
}

func TestMinReclaimKeepsThresholdMet(t *testing.T) {
	pods := []*v1.Pod{newPod("a"), newPod("b")}
	n := healthyNode()
	n.memAvail = 50 * Mi
	s := summary(n, podStats(pods[0], usage{memory: 2 * Gi}), podStats(pods[1], usage{memory: 1 * Gi}))
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", "memory.available=500Mi"), pods, s)
	assert.Equal(t, []string{"a"}, h.sync(t))

	// 300Mi available: above the threshold, below threshold + min-reclaim.
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 300 * Mi })
	h.pods = pods[1:]
	assert.Equal(t, []string{"b"}, h.sync(t))

	// 700Mi: reclaimed; nothing more.
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 700 * Mi })
	h.pods = nil
	assert.Empty(t, h.sync(t))
	h.pods = pods
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.AvailableBytes = 300 * Mi })
	assert.Empty(t, h.sync(t), "a threshold not met before does not use its min-reclaim")
}

func TestStaleStatsDoNotEvict(t *testing.T) {
	pods := []*v1.Pod{newPod("a"), newPod("b")}
	n := healthyNode()
	n.memAvail, n.at = 50*Mi, t0
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, summary(n, podStats(pods[0], usage{memory: Gi}), podStats(pods[1], usage{memory: Gi})))
	assert.Equal(t, []string{"a"}, h.sync(t))
	assert.Empty(t, h.sync(t), "same stats timestamp: no second eviction on stale data")
	assert.True(t, h.m.IsUnderMemoryPressure())
	h.stats.Update(func(s *stats.Summary) { s.Node.Memory.Time = t0.Add(10 * time.Second) })
	assert.Equal(t, []string{"a"}, h.sync(t), "fresh stats act again")
}

func TestDiskPressureReclaimsNodeLevelFirst(t *testing.T) {
	pods := []*v1.Pod{newPod("writer"), newPod("quiet")}
	cases := []struct {
		name      string
		hard      string
		dedicated bool
		freed     uint64 // bytes free after GC
		wantGC    []string
		wantEvict []string
	}{
		{name: "gc enough", hard: "nodefs.available<10%", freed: 20 * Gi, wantGC: []string{"containers", "images"}},
		{name: "gc not enough", hard: "nodefs.available<10%", freed: 9 * Gi, wantGC: []string{"containers", "images"}, wantEvict: []string{"writer"}},
		// Upstream: only logs and local volumes are on nodefs then, which no
		// garbage collection frees.
		{name: "dedicated imagefs: no nodefs gc", hard: "nodefs.available<10%", dedicated: true, freed: 5 * Gi, wantEvict: []string{"writer"}},
		{name: "min reclaim not reached after gc", hard: "nodefs.available<10%", freed: 11 * Gi, wantGC: []string{"containers", "images"}, wantEvict: []string{"writer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := healthyNode()
			n.fsAvail, n.dedicated = 1*Gi, tc.dedicated
			s := summary(n, podStats(pods[0], usage{logs: 5 * Gi, rootfs: Gi}), podStats(pods[1], usage{logs: Mi}))
			minReclaim := ""
			if tc.name == "min reclaim not reached after gc" {
				minReclaim = "nodefs.available=2Gi"
			}
			h := newHarness(t, mustParse(t, tc.hard, "", "", minReclaim), pods, s)
			h.gc.OnImages = func(context.Context) error {
				h.stats.Update(func(s *stats.Summary) { s.Node.Fs.AvailableBytes = tc.freed })
				return nil
			}
			h.gc.OnContainers = func(context.Context) error {
				if tc.dedicated {
					h.stats.Update(func(s *stats.Summary) { s.Node.Fs.AvailableBytes = tc.freed })
				}
				return errors.New("some containers could not be removed")
			}
			assert.Equal(t, tc.wantEvict, nilIfEmpty(h.sync(t)))
			assert.Equal(t, tc.wantGC, h.gc.Calls())
			assert.True(t, h.m.IsUnderDiskPressure())
			if tc.wantEvict != nil {
				msg := h.killer.Kills()[0].Status.Message
				// 10% of 100Gi through upstream's float32 percentage.
				assert.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 1Gi. Container c was using 6Gi, request is 0, has larger consumption of ephemeral-storage. ", msg)
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestLocalStorageEviction(t *testing.T) {
	cases := []struct {
		name      string
		pod       *v1.Pod
		u         usage
		dedicated bool
		want      string
		signal    eviction.Signal // what OnEvict hears
	}{
		{name: "emptyDir over sizeLimit", pod: newPod("p", emptyDir("cache", "1Gi")), u: usage{volumes: map[string]uint64{"cache": 2 * Gi}},
			want: `Usage of EmptyDir volume "cache" exceeds the limit "1Gi". `, signal: eviction.SignalEmptyDirFsLimit},
		{name: "emptyDir within sizeLimit", pod: newPod("p", emptyDir("cache", "1Gi")), u: usage{volumes: map[string]uint64{"cache": Gi}}},
		{name: "container over its limit", pod: newPod("p", limit(v1.ResourceEphemeralStorage, "1Gi")), u: usage{rootfs: 700 * Mi, logs: 400 * Mi},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ", signal: eviction.SignalEphemeralPodFsLimit},
		{name: "limit keeps its format", pod: newPod("p", limit(v1.ResourceEphemeralStorage, "1G")), u: usage{logs: 1100 * 1000 * 1000},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1G. ", signal: eviction.SignalEphemeralPodFsLimit},
		{name: "dedicated imagefs: writable layer does not count", pod: newPod("p", limit(v1.ResourceEphemeralStorage, "1Gi")), u: usage{rootfs: 5 * Gi, logs: 400 * Mi}, dedicated: true},
		{name: "pod total over limit with volume", pod: newPod("p", limit(v1.ResourceEphemeralStorage, "1Gi"), emptyDir("v", "")), u: usage{logs: 100 * Mi, volumes: map[string]uint64{"v": Gi}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ", signal: eviction.SignalEphemeralPodFsLimit},
		{name: "critical pod spared", pod: newPod("p", emptyDir("cache", "1Gi"), priority(podspec.SystemCriticalPriority)), u: usage{volumes: map[string]uint64{"cache": 2 * Gi}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := healthyNode()
			n.dedicated = tc.dedicated
			other := newPod("innocent")
			var heard []eviction.Signal
			h := newHarness(t, nil, []*v1.Pod{other, tc.pod}, summary(n, podStats(other, usage{logs: 10 * Gi}), podStats(tc.pod, tc.u)),
				func(o *eviction.Options) {
					o.OnEvict = func(_ *v1.Pod, sig eviction.Signal) { heard = append(heard, sig) }
				})
			got := h.sync(t)
			if tc.want == "" {
				assert.Empty(t, got)
				assert.Empty(t, heard)
				return
			}
			assert.Equal(t, []string{"p"}, got)
			assert.Equal(t, []eviction.Signal{tc.signal}, heard)
			k := h.killer.Kills()[0]
			assert.Equal(t, tc.want, k.Status.Message)
			assert.Equal(t, int64(0), *k.GracePeriod)
			assert.Equal(t, "Evicted", k.Status.Reason)
			assert.Empty(t, h.m.NodeConditions(), "a pod's own limit is no node pressure")
		})
	}
	t.Run("incomplete stats still evict", func(t *testing.T) {
		p := newPod("p", emptyDir("cache", "1Gi"))
		s := summary(healthyNode(), podStats(p, usage{volumes: map[string]uint64{"cache": 2 * Gi}}))
		s.Incomplete = errors.New("list pod sandbox stats: failed to obtain metrics for sandbox")
		h := newHarness(t, nil, []*v1.Pod{p}, s)
		assert.Equal(t, []string{"p"}, h.sync(t))
	})
	ps := podStats(newPod("c"), usage{logs: 2 * Gi})
	assert.Equal(t, `Container c exceeded its local ephemeral storage limit "1Gi". `,
		eviction.LocalStorageViolation(withInitLimit(newPod("c")), &ps, false))
}

// withInitLimit gives container c a 1Gi limit and adds a container with a
// 10Gi one, so c breaks its own limit long before the pod's 11Gi total.
func withInitLimit(p *v1.Pod) *v1.Pod {
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: mustQty("1Gi")}
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "big-limit", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: mustQty("10Gi")}}})
	return p
}

func TestKillErrorIsReported(t *testing.T) {
	pods := []*v1.Pod{newPod("a")}
	n := healthyNode()
	n.memAvail = 10 * Mi
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, summary(n, podStats(pods[0], usage{memory: Gi})))
	h.killer.Err = errors.New("runtime down")
	evicted, err := h.m.Synchronize(context.Background())
	assert.Equal(t, []string{"a"}, names(evicted), "counts as evicted, as upstream")
	assert.ErrorContains(t, err, "evict pod default/a: runtime down")

	h.stats.SetError(errors.New("no stats"))
	_, err = h.m.Synchronize(context.Background())
	assert.ErrorContains(t, err, "synchronize: get stats: no stats")
}

func TestAdmit(t *testing.T) {
	besteffort := newPod("be")
	burstable := newPod("bu", request(v1.ResourceMemory, "100Mi"))
	tolerant := newPod("tol")
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: "node.kubernetes.io/memory-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	critical := newPod("crit", priority(podspec.SystemCriticalPriority))
	static := newPod("static", annotation("kubernetes.io/config.source", "file"))
	cases := []struct {
		name      string
		mem, disk bool
		pod       *v1.Pod
		admit     bool
		msg       string
	}{
		{name: "no pressure", pod: besteffort, admit: true},
		{name: "memory: besteffort rejected", mem: true, pod: besteffort, msg: "The node had condition: [MemoryPressure]. "},
		{name: "memory: burstable admitted", mem: true, pod: burstable, admit: true},
		{name: "memory: tolerating besteffort admitted", mem: true, pod: tolerant, admit: true},
		{name: "memory: critical admitted", mem: true, pod: critical, admit: true},
		{name: "disk: burstable rejected", disk: true, pod: burstable, msg: "The node had condition: [DiskPressure]. "},
		{name: "memory and disk: burstable rejected", mem: true, disk: true, pod: burstable, msg: "The node had condition: [MemoryPressure DiskPressure]. "},
		{name: "disk: static admitted", disk: true, pod: static, admit: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := healthyNode()
			if tc.mem {
				n.memAvail = 10 * Mi
			}
			if tc.disk {
				n.fsAvail = Gi
			}
			h := newHarness(t, eviction.DefaultHardThresholds(), nil, summary(n))
			h.sync(t)
			admit, reason, msg := h.m.Admit(tc.pod)
			assert.Equal(t, tc.admit, admit)
			if !tc.admit {
				assert.Equal(t, "Evicted", reason)
				assert.Equal(t, tc.msg, msg)
			}
		})
	}
}

func TestRunEvictsEveryIntervalAndStops(t *testing.T) {
	pods := []*v1.Pod{newPod("a"), newPod("b")}
	n := healthyNode()
	n.memAvail = 10 * Mi
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, summary(n, podStats(pods[0], usage{memory: 2 * Gi}), podStats(pods[1], usage{memory: Gi})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.m.Run(ctx) }()

	waitFor(t, func() bool { return len(h.killer.Kills()) == 1 && h.clk.HasWaiters() })
	h.clk.Step(9 * time.Second)
	assert.Len(t, h.killer.Kills(), 1, "no pass before the interval")
	h.clk.Step(time.Second)
	waitFor(t, func() bool { return len(h.killer.Kills()) == 2 && h.clk.HasWaiters() })
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunWaitsForCleanup(t *testing.T) {
	pods := []*v1.Pod{newPod("a")}
	n := healthyNode()
	n.memAvail = 10 * Mi
	cleaned := make(chan struct{})
	h := newHarness(t, mustParse(t, "memory.available<100Mi", "", "", ""), pods, summary(n, podStats(pods[0], usage{memory: Gi})),
		func(o *eviction.Options) {
			o.PodCleanedUp = func(*v1.Pod) bool {
				select {
				case <-cleaned:
					return true
				default:
					return false
				}
			}
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.m.Run(ctx) }()
	waitFor(t, func() bool { return len(h.killer.Kills()) == 1 && h.clk.HasWaiters() })
	h.clk.Step(time.Second) // poll: not cleaned, stays waiting
	h.pods = nil
	close(cleaned)
	h.clk.Step(time.Second) // poll: cleaned, next pass at once
	waitFor(t, func() bool { return h.stats.Calls() == 2 })
	cancel()
	require.NoError(t, <-done)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		runtime.Gosched()
	}
}

func TestAllocatableMemoryThreshold(t *testing.T) {
	pods := []*v1.Pod{newPod("a"), newPod("b")}
	s := summary(healthyNode(), podStats(pods[0], usage{memory: Gi}), podStats(pods[1], usage{memory: 2 * Gi}))
	s.Node.AllocatableMemory = &stats.MemoryStats{AvailableBytes: 50 * Mi, WorkingSetBytes: 3 * Gi}
	h := newHarness(t, eviction.AddAllocatableThresholds(mustParse(t, "memory.available<100Mi", "", "", "")), pods, s)
	assert.Equal(t, []string{"b"}, h.sync(t))
	assert.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure}, h.m.NodeConditions())
	assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 2Gi, request is 0, has larger consumption of memory. ", h.killer.Kills()[0].Status.Message)
}
