package eviction

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// MachineOptions configure a Machine. Zero values are the documented
// defaults.
type MachineOptions struct {
	// Thresholds are the eviction thresholds (ParseThresholds,
	// DefaultHardThresholds). None means only local storage limits are
	// enforced.
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays true
	// after its thresholds were last met. Default 5m.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps the grace period of a pod evicted for
	// a soft threshold: the pod gets min(this, its own
	// terminationGracePeriodSeconds). Default 0, as upstream's
	// --eviction-max-pod-grace-period.
	MaxPodGracePeriodSeconds int64
	// ContainerGC and ImageGC say which node-level reclaim the caller can
	// run under disk pressure: deleting dead containers, deleting unused
	// images. A Decision asks only for what is set here; with neither, a
	// disk signal evicts a pod at once.
	ContainerGC, ImageGC bool
}

// Input is what one pass observed.
type Input struct {
	// Now is the time of the pass.
	Now time.Time
	// Observations are the node's signals: Observe of the pass's summary.
	Observations Observations
	// Pods are the active pods: admitted and not terminated. Ranking
	// keeps their order between pods it cannot tell apart.
	Pods []*v1.Pod
	// Stats returns a pod's stats: PodStatsFunc of the pass's summary.
	// Nil means no pod has any.
	Stats StatsFunc
	// DedicatedImageFs is the summary's Node.DedicatedImageFs: the images
	// (and writable layers, unless SplitContainerFs) are on a filesystem
	// of their own.
	DedicatedImageFs bool
	// SplitContainerFs is the summary's Node.SplitContainerFs: the
	// runtime keeps the writable layers on another filesystem than the
	// images.
	SplitContainerFs bool
}

// NewInput is the Input of a pass that measured s at now, with the given
// active pods.
func NewInput(now time.Time, s *stats.Summary, pods []*v1.Pod) Input {
	in := Input{Now: now, Observations: Observe(s), Pods: pods, Stats: PodStatsFunc(s)}
	if s != nil {
		in.DedicatedImageFs, in.SplitContainerFs = s.Node.DedicatedImageFs, s.Node.SplitContainerFs
	}
	return in
}

// Decision is what one pass decided: the state to publish and the work to
// do, in this order: evict Evictions; if Reclaim asks for anything, run it,
// measure the node again and hand that to Machine.Reclaimed, which returns
// the evictions that remain to be done.
type Decision struct {
	// Conditions are the pressure conditions now true, in the order
	// MemoryPressure, DiskPressure, PIDPressure: those of a signal with a
	// threshold met within the last PressureTransitionPeriod. Admission
	// reads them (Admit), and so does the node's status.
	Conditions []v1.NodeConditionType
	// Met are the thresholds the observations meet, in configuration
	// order; one met in the previous pass with its grace period over
	// stays met until its minimum reclaim is available again.
	Met []MetThreshold
	// Acting are the met thresholds that act in this pass, memory first,
	// then in configuration order: those met for their grace period whose
	// stats are newer than the previous pass's (or carry no time). The
	// pass reclaims and evicts for the first; the eviction message names
	// the first of them that starves the same resource. Empty when a pod
	// was over its local storage limits: the pass ends with those.
	Acting []Threshold
	// Resource is the resource the first acting threshold starves
	// (memory, ephemeral-storage, inodes, pids); empty when none acts.
	Resource v1.ResourceName
	// Reclaim is the node-level reclaim to run before any pod is evicted
	// for the first acting threshold. Zero when none applies; the pod to
	// evict, if any, is then in Evictions.
	Reclaim Reclaim
	// Derived are, on the first pass only, the containerfs thresholds the
	// machine runs with from then on, derived for the node's disks
	// (ContainerFsThresholds), and Ignored the configured containerfs
	// thresholds they replaced.
	Derived, Ignored []Threshold
	// Evictions are the pods to evict now: every pod over one of its
	// local storage limits, or else the one pod ranked first for the
	// first acting threshold, when no reclaim comes first. Critical pods
	// are never among them.
	Evictions []Eviction
}

// MetThreshold is a threshold a pass found met.
type MetThreshold struct {
	Threshold Threshold
	// Since is when passes in a row began to find it met.
	Since time.Time
	// GraceOver reports whether it has been met for its grace period (a
	// hard threshold at once); only then can it act.
	GraceOver bool
}

// Reclaim is node-level reclaim for a disk signal: what frees the
// resource without evicting a pod. Containers run first.
type Reclaim struct {
	// Containers means: delete dead containers.
	Containers bool
	// Images means: delete unused images (not for nodefs when the image
	// filesystem is dedicated).
	Images bool
}

// Any reports whether r asks for anything.
func (r Reclaim) Any() bool { return r.Containers || r.Images }

// Eviction is one pod to evict and how.
type Eviction struct {
	Pod *v1.Pod
	// Signal decided it: a threshold's (memory.available ...) or a local
	// storage limit's (emptydirfs.limit, ephemeralpodfs.limit,
	// ephemeralcontainerfs.limit), upstream's kubelet_evictions label.
	Signal Signal
	// GracePeriodSeconds is the kill's grace period: 0 for a local storage
	// limit, HardEvictionGracePeriodSeconds for a hard threshold, and
	// min(MaxPodGracePeriodSeconds, the pod's own) for a soft one.
	GracePeriodSeconds int64
	// Message says why, as upstream: the status message and the Evicted
	// event's.
	Message string
	// Condition is the DisruptionTarget condition of a pressure eviction,
	// without its transition time; nil for a local storage limit, as
	// upstream.
	Condition *v1.PodCondition
}

// Status is the status the evicted pod must end with, its condition (if
// any) changed at the given time: phase Failed, reason Evicted, Message.
func (e Eviction) Status(at time.Time) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodFailed, Reason: Reason, Message: e.Message}
	if e.Condition != nil {
		c := *e.Condition
		c.LastTransitionTime.Time = at
		st.Conditions = []v1.PodCondition{c}
	}
	return st
}

// Machine is the deterministic core of the eviction manager: it decides,
// pass by pass, which thresholds are met, which pressure conditions are
// true, what node-level reclaim runs and which pod is evicted. It keeps
// what upstream keeps between passes: when each threshold was first met,
// which were met after their grace period (they stay met until their
// minimum reclaim is available), when each condition's thresholds were last
// met, and the previous pass's observations (stale stats do not act twice).
// It has no goroutine, clock or lock, and does no I/O: the caller measures,
// kills and collects. It is not safe for concurrent use; Manager drives one
// under its pass lock.
//
// A pass is Decide, then the evictions it returns; when its Reclaim asks for
// anything, the caller runs it, measures again and calls Reclaimed. See the
// package documentation for the loop.
type Machine struct {
	ts         []Threshold
	transition time.Duration
	maxGrace   int64
	gc         Reclaim // what the caller can run
	disksKnown bool    // the containerfs thresholds are derived

	firstSeen map[int]time.Time                  // index in ts: first met, in a row of passes
	lastMet   map[v1.NodeConditionType]time.Time // a threshold of the condition was last met
	graceMet  []int                              // met with their grace period over
	lastObs   Observations

	// A pass waiting for Reclaimed: its input and acting thresholds.
	waiting bool
	in      Input
	acting  []Threshold
}

// NewMachine validates opts and returns a Machine that has seen no pass. An
// invalid threshold is an error wrapping ErrInvalidThreshold. The machine
// keeps its own copy of the thresholds.
func NewMachine(opts MachineOptions) (*Machine, error) {
	m, err := newMachine(opts)
	if err != nil {
		return nil, fmt.Errorf("new eviction machine: %w", err)
	}
	return m, nil
}

func newMachine(opts MachineOptions) (*Machine, error) {
	for _, t := range opts.Thresholds {
		if !t.Signal.Valid() {
			return nil, fmt.Errorf("%w: unsupported eviction signal %q", ErrInvalidThreshold, t.Signal)
		}
		if (t.Value.Quantity == nil) == (t.Value.Percentage == 0) {
			return nil, fmt.Errorf("%w: %s: exactly one of quantity and percentage must be set", ErrInvalidThreshold, t.Signal)
		}
		if t.GracePeriod < 0 {
			return nil, fmt.Errorf("%w: %s: negative grace period", ErrInvalidThreshold, t.Signal)
		}
	}
	if opts.PressureTransitionPeriod <= 0 {
		opts.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	return &Machine{
		ts:         cloneThresholds(opts.Thresholds),
		transition: opts.PressureTransitionPeriod,
		maxGrace:   opts.MaxPodGracePeriodSeconds,
		gc:         Reclaim{Containers: opts.ContainerGC, Images: opts.ImageGC},
		firstSeen:  map[int]time.Time{},
		lastMet:    map[v1.NodeConditionType]time.Time{},
	}, nil
}

// cloneThresholds deep-copies ts, so that the caller keeps its quantities.
func cloneThresholds(ts []Threshold) []Threshold {
	out := slices.Clone(ts)
	for i := range out {
		t := &out[i]
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
	return out
}

// Thresholds returns the machine's thresholds.
func (m *Machine) Thresholds() []Threshold { return slices.Clone(m.ts) }

// Decide is one pass over what in observed. It updates the machine's
// bookkeeping and returns the conditions and what to do: the pods over
// their local storage limits (the pass then ends), else, if a threshold
// acts, node-level reclaim for a disk signal (ask Reclaimed afterwards) or
// the one pod to evict. A pass that Reclaimed did not end is dropped.
func (m *Machine) Decide(in Input) Decision {
	m.waiting, m.in, m.acting = false, Input{}, nil
	if in.Stats == nil {
		in.Stats = PodStatsFunc(nil)
	}
	obs, now := in.Observations, in.Now
	var d Decision
	if !m.disksKnown {
		// Upstream derives the containerfs thresholds once, at the first
		// pass, when it first learns how the runtime's filesystems lie.
		m.disksKnown = true
		m.ts, d.Ignored = ContainerFsThresholds(m.ts, in.DedicatedImageFs, in.SplitContainerFs)
		for _, t := range m.ts {
			if isContainerFs(t.Signal) {
				d.Derived = append(d.Derived, t)
			}
		}
	}

	var met []int
	for i := range m.ts {
		if m.ts[i].IsMet(obs, false) {
			met = append(met, i)
		}
	}
	if len(m.graceMet) > 0 {
		met = mergeIdx(met, thresholdsMet(m.ts, m.graceMet, obs, true))
	}
	firstSeen := make(map[int]time.Time, len(met))
	for _, i := range met {
		if t, ok := m.firstSeen[i]; ok {
			firstSeen[i] = t
		} else {
			firstSeen[i] = now
		}
	}
	for _, c := range conditionsOf(m.ts, met) {
		m.lastMet[c] = now
	}
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if t, ok := m.lastMet[c]; ok {
			if now.Sub(t) < m.transition {
				d.Conditions = append(d.Conditions, c)
			} else {
				delete(m.lastMet, c)
			}
		}
	}
	var graceMet []int
	for _, i := range met {
		over := now.Sub(firstSeen[i]) >= m.ts[i].GracePeriod
		if over {
			graceMet = append(graceMet, i)
		}
		d.Met = append(d.Met, MetThreshold{Threshold: m.ts[i], Since: firstSeen[i], GraceOver: over})
	}
	// Act only on thresholds whose stats are newer than last pass's.
	var fresh []int
	for _, i := range graceMet {
		o := obs[m.ts[i].Signal]
		last, ok := m.lastObs[m.ts[i].Signal]
		if !ok || o.Time.IsZero() || o.Time.After(last.Time) {
			fresh = append(fresh, i)
		}
	}
	m.firstSeen, m.graceMet, m.lastObs = firstSeen, graceMet, obs

	if d.Evictions = localStorageEvictions(in); len(d.Evictions) > 0 || len(fresh) == 0 {
		return d
	}
	// Memory first, then the rest in configuration order.
	slices.SortStableFunc(fresh, func(a, b int) int {
		return cmpFirst(isMemory(m.ts[a].Signal), isMemory(m.ts[b].Signal))
	})
	for _, i := range fresh {
		d.Acting = append(d.Acting, m.ts[i])
	}
	sig := d.Acting[0].Signal
	d.Resource = signalInfo[sig].resource
	d.Reclaim = m.reclaimFor(sig, in.DedicatedImageFs, in.SplitContainerFs)
	if d.Reclaim.Any() {
		m.waiting, m.in, m.acting = true, in, d.Acting
		return d
	}
	d.Evictions = m.evictFor(in, d.Acting)
	return d
}

// Reclaimed ends a pass whose Decision asked for node-level reclaim, given
// the node's signals measured once it ran: if no threshold is met any more,
// counting minimum reclaim, pressure is relieved and nothing is evicted;
// otherwise it returns the one pod to evict (none if every active pod is
// critical), ranked on the pass's own stats. Nil after means the node could
// not be measured again, which counts as not relieved. Without a pass
// waiting for it, Reclaimed returns nothing.
func (m *Machine) Reclaimed(after Observations) (evictions []Eviction, relieved bool) {
	if !m.waiting {
		return nil, false
	}
	in, acting := m.in, m.acting
	m.waiting, m.in, m.acting = false, Input{}, nil
	if after != nil && !slices.ContainsFunc(m.ts, func(t Threshold) bool { return t.IsMet(after, true) }) {
		return nil, true
	}
	return m.evictFor(in, acting), false
}

// reclaimFor returns the node-level reclaim that frees sig's resource,
// among what the caller can run, as upstream. With a dedicated image
// filesystem that also holds the writable layers, nodefs has none (only
// logs and volumes are on it) and imagefs and containerfs have containers
// and images. With the writable layers split from a dedicated image
// filesystem, imagefs has images, and nodefs and containerfs containers.
// On one disk, every disk signal has both.
func (m *Machine) reclaimFor(sig Signal, dedicated, split bool) Reclaim {
	if signalInfo[sig].condition != v1.NodeDiskPressure {
		return Reclaim{}
	}
	image := sig == SignalImageFsAvailable || sig == SignalImageFsInodesFree
	node := sig == SignalNodeFsAvailable || sig == SignalNodeFsInodesFree
	r := Reclaim{Containers: true, Images: true}
	switch {
	case dedicated && split && image:
		r.Containers = false
	case dedicated && split:
		r.Images = false
	case dedicated && node:
		r = Reclaim{}
	}
	r.Containers = r.Containers && m.gc.Containers
	r.Images = r.Images && m.gc.Images
	return r
}

// evictFor returns the pod ranked first for the first acting threshold
// that is not critical, or nothing.
func (m *Machine) evictFor(in Input, acting []Threshold) []Eviction {
	if len(in.Pods) == 0 {
		return nil
	}
	t := acting[0]
	res := signalInfo[t.Signal].resource
	ranked := slices.Clone(in.Pods)
	RankFor(t.Signal, in.DedicatedImageFs, in.SplitContainerFs)(ranked, in.Stats)
	for _, pod := range ranked {
		if podspec.IsCritical(pod) {
			continue
		}
		grace := HardEvictionGracePeriodSeconds
		if !t.IsHard() {
			grace = m.maxGrace
			if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = min(grace, *g)
			}
		}
		msg := evictionMessage(res, pod, in.Stats, acting, in.Observations)
		cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: msg}
		return []Eviction{{Pod: pod, Signal: t.Signal, GracePeriodSeconds: grace, Message: msg, Condition: cond}}
	}
	return nil
}

func isMemory(s Signal) bool {
	return s == SignalMemoryAvailable || s == SignalAllocatableMemoryAvailable
}

func isContainerFs(s Signal) bool {
	return s == SignalContainerFsAvailable || s == SignalContainerFsInodesFree
}
