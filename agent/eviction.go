package agent

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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

// newEviction builds the eviction manager over the agent's blocks: active
// pods from the desired set and the workers, kills through the workers'
// synchronous kill, container collection through podsync.
func (a *Agent) newEviction() (*eviction.Manager, error) {
	o := a.opts.Eviction
	if a.stats == nil {
		return nil, fmt.Errorf("eviction stats: %w", a.statsErr)
	}
	thresholds := o.Thresholds
	if thresholds == nil {
		thresholds = eviction.DefaultHardThresholds()
	}
	return eviction.New(eviction.Options{
		Clock:                    a.clock,
		Thresholds:               thresholds,
		Stats:                    a.stats,
		Pods:                     a.activePods,
		Killer:                   eviction.PodKillerFunc(a.killForEviction),
		ContainerGC:              eviction.ContainerGarbageCollectorFunc(a.collectDeadContainers),
		ImageGC:                  a.imageGC,
		PodCleanedUp:             func(pod *v1.Pod) bool { return !a.workers.CouldHaveRunningContainers(pod.UID) },
		MonitoringInterval:       o.MonitoringInterval,
		PressureTransitionPeriod: o.PressureTransitionPeriod,
		NodeRef:                  &v1.ObjectReference{Kind: "Node", Name: a.opts.NodeName},
		Recorder:                 a.events,
		Logger:                   a.log.With("component", "eviction"),
		OnEvict: func(_ *v1.Pod, sig eviction.Signal) {
			if em, ok := a.metrics.(EvictionMetrics); ok {
				em.Evicted(string(sig))
			}
		},
	})
}

// activePods are the admitted pods whose termination has not begun, as
// upstream's GetActivePods.
func (a *Agent) activePods() []*v1.Pod {
	pods := a.pods.GetPods()
	out := pods[:0]
	for _, p := range pods {
		if a.isRejected(p.UID) || a.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		if st, ok := a.status.GetPodStatus(p.UID); ok && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// killForEviction kills the pod through its worker and waits for the
// containers to stop; the pod's final status is the one eviction chose.
func (a *Agent) killForEviction(ctx context.Context, pod *v1.Pod, st v1.PodStatus, grace *int64) error {
	return a.workers.KillPod(ctx, pod, podworkers.KillPodOptions{
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

// collectDeadContainers removes every dead container, for disk pressure.
func (a *Agent) collectDeadContainers(ctx context.Context) error {
	return a.syncer.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 0, MaxContainers: 0}, a.podExists)
}

// podExists reports whether the agent still cares for a pod: it is desired
// or its worker has not finished.
func (a *Agent) podExists(uid types.UID) bool {
	_, ok := a.pods.GetPodByUID(uid)
	return ok || a.workers.IsPodKnownToWorker(uid)
}
