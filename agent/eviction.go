package agent

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// EvictionOptions configure node-pressure eviction. The zero value runs it
// with upstream's default hard thresholds on the machine's own statistics.
type EvictionOptions struct {
	// Disabled turns eviction (and eviction admission) off.
	Disabled bool
	// Thresholds replace the defaults (eviction.DefaultHardThresholds), as
	// upstream's --eviction-hard and --eviction-soft do; parse them with
	// eviction.ParseThresholds.
	Thresholds []eviction.Threshold
	// Stats measures the node and its pods (and the image filesystem for
	// image garbage collection, even with Disabled). Nil means
	// stats.NewLinux over the runtime, with nodefs the root directory's
	// filesystem.
	Stats stats.Provider
	// MonitoringInterval is how often pressure is checked (10s).
	MonitoringInterval time.Duration
	// PressureTransitionPeriod is how long a pressure condition stays after
	// its thresholds stop being met (5m).
	PressureTransitionPeriod time.Duration
}

// newEviction builds the eviction manager over the node's blocks: active
// pods from the desired set and the workers, kills through the workers'
// synchronous kill, container collection through podsync.
func (b *blocks) newEviction() (*eviction.Manager, error) {
	o := b.opts.Eviction
	if b.stats == nil {
		return nil, fmt.Errorf("eviction stats: %w", b.statsErr)
	}
	thresholds := o.Thresholds
	if thresholds == nil {
		thresholds = eviction.DefaultHardThresholds()
	}
	view, gc, metrics := b.view, b.podsync, b.metrics
	return eviction.New(eviction.Options{
		Clock:      b.clock,
		Thresholds: thresholds,
		Stats:      b.stats,
		Pods:       view.active,
		Killer:     eviction.PodKillerFunc(view.killForEviction),
		// Every dead container goes, for disk pressure.
		ContainerGC: eviction.ContainerGarbageCollectorFunc(func(ctx context.Context) error {
			return gc.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 0, MaxContainers: 0}, view.exists)
		}),
		ImageGC:                  b.imageGC,
		PodCleanedUp:             func(pod *v1.Pod) bool { return !view.workers.CouldHaveRunningContainers(pod.UID) },
		MonitoringInterval:       o.MonitoringInterval,
		PressureTransitionPeriod: o.PressureTransitionPeriod,
		NodeRef:                  &v1.ObjectReference{Kind: "Node", Name: b.opts.NodeName},
		Recorder:                 b.events,
		Logger:                   b.log.With("component", "eviction"),
		OnEvict: func(_ *v1.Pod, sig eviction.Signal) {
			if em, ok := metrics.(EvictionMetrics); ok {
				em.Evicted(string(sig))
			}
		},
	})
}

// killForEviction kills the pod through its worker and waits for the
// containers to stop; the pod's final status is the one eviction chose.
func (v *podView) killForEviction(ctx context.Context, pod *v1.Pod, st v1.PodStatus, grace *int64) error {
	return v.workers.KillPod(ctx, pod, podworkers.KillPodOptions{
		Evict:                                    true,
		PodTerminationGracePeriodSecondsOverride: grace,
		PodStatusFunc: func(s *v1.PodStatus) {
			s.Phase, s.Reason, s.Message = st.Phase, st.Reason, st.Message
			for _, c := range st.Conditions {
				setCondition(s, c)
			}
		},
	})
}

// setCondition replaces the condition of c's type in s, or appends c.
func setCondition(s *v1.PodStatus, c v1.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}
