package eviction

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Manager watches the node's resources, reports pressure and evicts pods.
// Build it with New; drive it with Run, or call Synchronize yourself.
type Manager struct {
	o   Options
	log *slog.Logger

	// syncMu serializes Synchronize.
	syncMu sync.Mutex

	// mu guards the state below, which Synchronize writes and the
	// readers (Admit, IsUnder*, NodeConditions) read.
	mu                  sync.RWMutex
	conditions          []v1.NodeConditionType
	conditionsLastSeen  map[v1.NodeConditionType]time.Time
	thresholdsFirstSeen map[int]time.Time // index in o.Thresholds
	thresholdsMet       []int             // met with their grace period over
	lastObservations    Observations
}

// New validates opts and returns a Manager; it starts nothing. A missing
// required option is an error wrapping ErrMissingStats, ErrMissingPods or
// ErrMissingKiller; an invalid threshold one wrapping ErrInvalidThreshold.
func New(opts Options) (*Manager, error) {
	switch {
	case opts.Stats == nil:
		return nil, fmt.Errorf("new eviction manager: %w", ErrMissingStats)
	case opts.Pods == nil:
		return nil, fmt.Errorf("new eviction manager: %w", ErrMissingPods)
	case opts.Killer == nil:
		return nil, fmt.Errorf("new eviction manager: %w", ErrMissingKiller)
	}
	for _, t := range opts.Thresholds {
		if !t.Signal.Valid() {
			return nil, fmt.Errorf("new eviction manager: %w: unsupported eviction signal %q", ErrInvalidThreshold, t.Signal)
		}
		if (t.Value.Quantity == nil) == (t.Value.Percentage == 0) {
			return nil, fmt.Errorf("new eviction manager: %w: %s: exactly one of quantity and percentage must be set", ErrInvalidThreshold, t.Signal)
		}
		if t.GracePeriod < 0 {
			return nil, fmt.Errorf("new eviction manager: %w: %s: negative grace period", ErrInvalidThreshold, t.Signal)
		}
	}
	opts.Thresholds = slices.Clone(opts.Thresholds)
	for i := range opts.Thresholds { // the caller keeps its quantities
		t := &opts.Thresholds[i]
		if t.Value.Quantity != nil {
			q := t.Value.Quantity.DeepCopy()
			t.Value.Quantity = &q
		}
		if t.MinReclaim != nil {
			mr := *t.MinReclaim
			if mr.Quantity != nil {
				q := mr.Quantity.DeepCopy()
				mr.Quantity = &q
			}
			t.MinReclaim = &mr
		}
	}
	if opts.MonitoringInterval <= 0 {
		opts.MonitoringInterval = DefaultMonitoringInterval
	}
	if opts.PressureTransitionPeriod <= 0 {
		opts.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		o:                   opts,
		log:                 log,
		conditionsLastSeen:  map[v1.NodeConditionType]time.Time{},
		thresholdsFirstSeen: map[int]time.Time{},
	}, nil
}

// Run synchronizes every MonitoringInterval until ctx ends, then returns nil.
// After an eviction it waits for the pod to be cleaned up when
// Options.PodCleanedUp is set. It starts no goroutine.
func (m *Manager) Run(ctx context.Context) error {
	for {
		evicted, err := m.Synchronize(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Error("eviction manager: synchronize", "err", err)
		}
		if len(evicted) > 0 && m.o.PodCleanedUp != nil {
			m.waitForCleanup(ctx, evicted)
		} else {
			t := m.o.Clock.NewTimer(m.o.MonitoringInterval)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C():
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	timeout := m.o.Clock.NewTimer(podCleanupTimeout)
	defer timeout.Stop()
	tick := m.o.Clock.NewTicker(podCleanupPollFreq)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			m.log.Warn("eviction manager: timed out waiting for evicted pods to be cleaned up", "pods", podNames(pods))
			return
		case <-tick.C():
			if !slices.ContainsFunc(pods, func(p *v1.Pod) bool { return !m.o.PodCleanedUp(p) }) {
				return
			}
		}
	}
}

// Synchronize is one pass of the manager, what Run does every interval:
// measure, work out which thresholds are met (soft ones only after their
// grace period, met ones until their minimum reclaim is available again),
// update the pressure conditions, evict pods over their local storage
// limits, and, if a threshold is met with fresh stats, reclaim node-level
// resources (disk signals) and, if that was not enough, evict at most one
// pod. It returns the pods it evicted. A kill that fails still counts as an
// eviction, as upstream; its error is returned with the pod.
func (m *Manager) Synchronize(ctx context.Context) ([]*v1.Pod, error) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()

	summary, err := m.o.Stats.Get(ctx)
	if err != nil {
		return nil, fmt.Errorf("synchronize: get stats: %w", err)
	}
	if summary.Incomplete != nil {
		m.log.Warn("eviction manager: stats incomplete", "err", summary.Incomplete)
	}
	active := m.o.Pods()
	now := m.o.Clock.Now()
	obs := Observe(summary)
	statsFn := PodStatsFunc(summary)

	all := make([]int, len(m.o.Thresholds))
	for i := range all {
		all[i] = i
	}
	met := thresholdsMet(m.o.Thresholds, all, obs, false)

	m.mu.Lock()
	if len(m.thresholdsMet) > 0 {
		met = mergeIdx(met, thresholdsMet(m.o.Thresholds, m.thresholdsMet, obs, true))
	}
	firstSeen := make(map[int]time.Time, len(met))
	for _, i := range met {
		if t, ok := m.thresholdsFirstSeen[i]; ok {
			firstSeen[i] = t
		} else {
			firstSeen[i] = now
		}
	}
	for _, c := range conditionsOf(m.o.Thresholds, met) {
		m.conditionsLastSeen[c] = now
	}
	var conds []v1.NodeConditionType
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if t, ok := m.conditionsLastSeen[c]; ok {
			if now.Sub(t) < m.o.PressureTransitionPeriod {
				conds = append(conds, c)
			} else {
				delete(m.conditionsLastSeen, c)
			}
		}
	}
	var graceMet []int
	for _, i := range met {
		if now.Sub(firstSeen[i]) >= m.o.Thresholds[i].GracePeriod {
			graceMet = append(graceMet, i)
		}
	}
	if !slices.Equal(conds, m.conditions) {
		m.log.Info("eviction manager: node conditions", "conditions", conds)
	}
	m.conditions = conds
	m.thresholdsFirstSeen = firstSeen
	m.thresholdsMet = graceMet
	// Act only on thresholds whose stats are newer than last pass's.
	var fresh []int
	for _, i := range graceMet {
		o := obs[m.o.Thresholds[i].Signal]
		last, ok := m.lastObservations[m.o.Thresholds[i].Signal]
		if !ok || o.Time.IsZero() || o.Time.After(last.Time) {
			fresh = append(fresh, i)
		}
	}
	m.lastObservations = obs
	m.mu.Unlock()

	if evicted, err := m.localStorageEviction(ctx, active, summary, statsFn); len(evicted) > 0 {
		return evicted, err
	}
	if len(fresh) == 0 {
		return nil, nil
	}

	// Memory first, then the rest in configuration order.
	slices.SortStableFunc(fresh, func(a, b int) int {
		return cmpFirst(isMemory(m.o.Thresholds[a].Signal), isMemory(m.o.Thresholds[b].Signal))
	})
	t := m.o.Thresholds[fresh[0]]
	res := signalInfo[t.Signal].resource
	m.log.Warn("eviction manager: attempting to reclaim", "resource", res, "threshold", t.String())
	if m.o.Recorder != nil && m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, v1.EventTypeWarning, EventThresholdMet, "Attempting to reclaim %s", res)
	}
	if m.reclaimNodeLevel(ctx, t.Signal, summary.Node.DedicatedImageFs) {
		m.log.Info("eviction manager: reduced pressure without evicting pods", "resource", res)
		return nil, nil
	}
	if len(active) == 0 {
		m.log.Error("eviction manager: thresholds met but no pods are active to evict", "resource", res)
		return nil, nil
	}
	ranked := slices.Clone(active)
	RankFor(t.Signal, summary.Node.DedicatedImageFs)(ranked, statsFn)

	metTs := make([]Threshold, 0, len(fresh))
	for _, i := range fresh {
		metTs = append(metTs, m.o.Thresholds[i])
	}
	for _, pod := range ranked {
		if podspec.IsCritical(pod) {
			continue
		}
		grace := HardEvictionGracePeriodSeconds
		if !t.IsHard() {
			grace = m.o.MaxPodGracePeriodSeconds
			if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = min(grace, *g)
			}
		}
		msg := evictionMessage(res, pod, statsFn, metTs, obs)
		cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: msg}
		return []*v1.Pod{pod}, m.evictPod(ctx, pod, t.Signal, grace, msg, cond)
	}
	m.log.Info("eviction manager: unable to evict any pod from the node", "resource", res)
	return nil, nil
}

func isMemory(s Signal) bool {
	return s == SignalMemoryAvailable || s == SignalAllocatableMemoryAvailable
}

// reclaimNodeLevel runs the garbage collection that frees a disk signal's
// resource, measures again, and reports whether no threshold (with its
// minimum reclaim) is met any more.
func (m *Manager) reclaimNodeLevel(ctx context.Context, sig Signal, dedicated bool) bool {
	var funcs []func(context.Context) error
	containerGC := func(ctx context.Context) error { return m.o.ContainerGC.DeleteAllUnusedContainers(ctx) }
	imageGC := func(ctx context.Context) error { return m.o.ImageGC.DeleteUnusedImages(ctx) }
	switch sig {
	case SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree:
		if m.o.ContainerGC != nil {
			funcs = append(funcs, containerGC)
		}
		nodeOnly := dedicated && (sig == SignalNodeFsAvailable || sig == SignalNodeFsInodesFree)
		if m.o.ImageGC != nil && !nodeOnly {
			funcs = append(funcs, imageGC)
		}
	}
	if len(funcs) == 0 {
		return false
	}
	for _, f := range funcs {
		if err := f(ctx); err != nil {
			m.log.Warn("eviction manager: node-level reclaim failed", "signal", sig, "err", err)
		}
	}
	summary, err := m.o.Stats.Get(ctx)
	if err != nil {
		m.log.Error("eviction manager: get stats after node-level reclaim", "err", err)
		return false
	}
	obs := Observe(summary)
	for _, t := range m.o.Thresholds {
		if t.IsMet(obs, true) {
			return false
		}
	}
	return true
}

// evictPod records the Evicted event and kills the pod with the given grace
// period and the status of an evicted pod; OnEvict hears of it, with the
// signal that decided it.
func (m *Manager) evictPod(ctx context.Context, pod *v1.Pod, sig Signal, grace int64, msg string, cond *v1.PodCondition) error {
	if m.o.Recorder != nil {
		m.o.Recorder.Eventf(pod, v1.EventTypeWarning, Reason, "%s", msg)
	}
	status := v1.PodStatus{Phase: v1.PodFailed, Reason: Reason, Message: msg}
	if cond != nil {
		c := *cond
		c.LastTransitionTime.Time = m.o.Clock.Now()
		status.Conditions = []v1.PodCondition{c}
	}
	m.log.Info("eviction manager: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "signal", sig, "gracePeriod", grace, "message", msg)
	if m.o.OnEvict != nil {
		m.o.OnEvict(pod, sig)
	}
	if err := m.o.Killer.KillPodForEviction(ctx, pod, status, &grace); err != nil {
		m.log.Error("eviction manager: kill pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// NodeConditions returns the pressure conditions now true, in the order
// MemoryPressure, DiskPressure, PIDPressure.
func (m *Manager) NodeConditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.conditions)
}

func (m *Manager) has(c v1.NodeConditionType) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Contains(m.conditions, c)
}

// IsUnderMemoryPressure reports whether MemoryPressure is true.
func (m *Manager) IsUnderMemoryPressure() bool { return m.has(v1.NodeMemoryPressure) }

// IsUnderDiskPressure reports whether DiskPressure is true.
func (m *Manager) IsUnderDiskPressure() bool { return m.has(v1.NodeDiskPressure) }

// IsUnderPIDPressure reports whether PIDPressure is true.
func (m *Manager) IsUnderPIDPressure() bool { return m.has(v1.NodePIDPressure) }

// Thresholds returns the configured thresholds.
func (m *Manager) Thresholds() []Threshold { return slices.Clone(m.o.Thresholds) }

func podNames(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}
