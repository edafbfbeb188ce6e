package eviction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Manager watches the node's resources, reports pressure and evicts pods.
// Build it with New; drive it with Run, or call Synchronize yourself. Its
// decisions are a Machine's; the Manager measures, kills, collects garbage,
// logs and records events.
type Manager struct {
	o   Options
	log *slog.Logger

	// syncMu serializes Synchronize and guards machine.
	syncMu  sync.Mutex
	machine *Machine

	// mu guards conditions, which Synchronize writes and the readers
	// (Admit, IsUnder*, NodeConditions) read.
	mu         sync.RWMutex
	conditions []v1.NodeConditionType
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
	mc, err := newMachine(MachineOptions{
		Thresholds:               opts.Thresholds,
		PressureTransitionPeriod: opts.PressureTransitionPeriod,
		MaxPodGracePeriodSeconds: opts.MaxPodGracePeriodSeconds,
		ContainerGC:              opts.ContainerGC != nil,
		ImageGC:                  opts.ImageGC != nil,
	})
	if err != nil {
		return nil, fmt.Errorf("new eviction manager: %w", err)
	}
	opts.Thresholds = mc.ts // the caller keeps its quantities
	if opts.MonitoringInterval <= 0 {
		opts.MonitoringInterval = DefaultMonitoringInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{o: opts, log: log, machine: mc}, nil
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
//
// The decisions are the Machine's (Decide, then Reclaimed after a reclaim);
// Synchronize gathers its input and carries them out.
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
	in := NewInput(m.o.Clock.Now(), summary, active)
	d := m.machine.Decide(in)
	m.logDisks(in, d)
	m.setConditions(d.Conditions)

	if len(d.Acting) == 0 { // nothing acts, or pods over their local storage limits
		var evicted []*v1.Pod
		var errs []error
		for _, e := range d.Evictions {
			if err := m.evictPod(ctx, e); err != nil {
				errs = append(errs, err)
			}
			evicted = append(evicted, e.Pod)
		}
		return evicted, errors.Join(errs...)
	}

	t, res := d.Acting[0], d.Resource
	m.log.Warn("eviction manager: attempting to reclaim", "resource", res, "threshold", t.String())
	if m.o.Recorder != nil && m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, v1.EventTypeWarning, EventThresholdMet, "Attempting to reclaim %s", res)
	}
	evictions := d.Evictions
	if d.Reclaim.Any() {
		var relieved bool
		evictions, relieved = m.machine.Reclaimed(m.reclaimNodeLevel(ctx, t.Signal, d.Reclaim))
		if relieved {
			m.log.Info("eviction manager: reduced pressure without evicting pods", "resource", res)
			return nil, nil
		}
	}
	if len(evictions) == 0 {
		if len(active) == 0 {
			m.log.Error("eviction manager: thresholds met but no pods are active to evict", "resource", res)
		} else {
			m.log.Info("eviction manager: unable to evict any pod from the node", "resource", res)
		}
		return nil, nil
	}
	e := evictions[0]
	return []*v1.Pod{e.Pod}, m.evictPod(ctx, e)
}

// logDisks logs, after the first pass, how the runtime's filesystems lie
// and the containerfs thresholds derived for them, with upstream's words
// for a configured one that is ignored.
func (m *Manager) logDisks(in Input, d Decision) {
	for _, t := range d.Ignored {
		kind := "hard"
		if !t.IsHard() {
			kind = "soft"
		}
		m.log.Warn("eviction manager: found conflicting containerfs eviction. Ignoring.",
			"err", fmt.Sprintf("found %s for %s eviction. ignoring", t.Signal, kind))
	}
	if d.Derived != nil || d.Ignored != nil {
		var derived []string
		for _, t := range d.Derived {
			derived = append(derived, t.String())
		}
		m.log.Info("eviction manager: filesystem detection", "dedicatedImageFs", in.DedicatedImageFs,
			"splitContainerFs", in.SplitContainerFs, "containerFsThresholds", derived)
	}
}

// setConditions publishes the pass's pressure conditions to the readers.
func (m *Manager) setConditions(conds []v1.NodeConditionType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(conds, m.conditions) {
		m.log.Info("eviction manager: node conditions", "conditions", conds)
	}
	m.conditions = conds
}

// reclaimNodeLevel runs the garbage collection r asks for (their errors are
// logged) and measures the node again; nil if it could not.
func (m *Manager) reclaimNodeLevel(ctx context.Context, sig Signal, r Reclaim) Observations {
	if r.Containers {
		if err := m.o.ContainerGC.DeleteAllUnusedContainers(ctx); err != nil {
			m.log.Warn("eviction manager: node-level reclaim failed", "signal", sig, "err", err)
		}
	}
	if r.Images {
		if err := m.o.ImageGC.DeleteUnusedImages(ctx); err != nil {
			m.log.Warn("eviction manager: node-level reclaim failed", "signal", sig, "err", err)
		}
	}
	summary, err := m.o.Stats.Get(ctx)
	if err != nil {
		m.log.Error("eviction manager: get stats after node-level reclaim", "err", err)
		return nil
	}
	return Observe(summary)
}

// evictPod records the Evicted event and kills the pod with the eviction's
// grace period and the status of an evicted pod; OnEvict hears of it, with
// the signal that decided it.
func (m *Manager) evictPod(ctx context.Context, e Eviction) error {
	pod, grace := e.Pod, e.GracePeriodSeconds
	if m.o.Recorder != nil {
		m.o.Recorder.Eventf(pod, v1.EventTypeWarning, Reason, "%s", e.Message)
	}
	status := e.Status(m.o.Clock.Now())
	m.log.Info("eviction manager: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "signal", e.Signal, "gracePeriod", grace, "message", e.Message)
	if m.o.OnEvict != nil {
		m.o.OnEvict(pod, e.Signal)
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

// Thresholds returns the configured thresholds (without the containerfs
// thresholds derived at the first pass: Machine.Thresholds has those).
func (m *Manager) Thresholds() []Threshold { return slices.Clone(m.o.Thresholds) }

func podNames(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}
