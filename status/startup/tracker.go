package startup

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Observation is how long a pod took to start.
type Observation struct {
	// Total is from the pod's creation to the status in which every
	// container was running.
	Total time.Duration
	// SLI is Total less the time spent pulling the pod's images and
	// running its init containers; it may be negative when the pod's
	// creation time is behind the node's clock.
	SLI time.Duration
	// CountsForSLI is false for a stateful pod, which the SLI leaves out.
	CountsForSLI bool
}

// Interval is a span of time, from Start to End.
type Interval struct{ Start, End time.Time }

// Tracker follows the pods being started (see the package doc). The zero
// value is not ready for use: call New.
type Tracker struct {
	mu       sync.Mutex
	pods     map[types.UID]*pod
	excluded map[types.UID]struct{} // unschedulable once: never followed
}

// pod is what a Tracker keeps of a pod until it has started.
type pod struct {
	pulls    []Interval  // finished pulls
	pending  []time.Time // pull starts not yet paired with an end
	initRuns map[string]time.Duration
	observed bool // answered for
}

// New returns an empty Tracker.
func New() *Tracker {
	return &Tracker{pods: map[types.UID]*pod{}, excluded: map[types.UID]struct{}{}}
}

// Add tells the Tracker the node was given p (or given it again): the first
// time, p is followed if it has not started yet, has a creation time and
// is not unschedulable. A pod already followed that turns unschedulable is
// dropped for good; one in a terminal phase is dropped.
func (t *Tracker) Add(p *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if podspec.IsTerminal(p.Status.Phase) {
		delete(t.pods, p.UID)
		return
	}
	if _, ok := t.excluded[p.UID]; ok {
		return
	}
	if Unschedulable(p) {
		delete(t.pods, p.UID)
		t.excluded[p.UID] = struct{}{}
		return
	}
	if _, ok := t.pods[p.UID]; ok || !p.Status.StartTime.IsZero() || p.CreationTimestamp.IsZero() {
		return
	}
	t.pods[p.UID] = &pod{initRuns: map[string]time.Duration{}}
}

// PullStarted notes that an image pull for the pod started at at.
func (t *Tracker) PullStarted(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.pods[uid]; s != nil {
		s.pending = append(s.pending, at)
	}
}

// PullFinished notes that an image pull for the pod succeeded at at: it
// ends the oldest pull start not yet ended, as upstream pairs them.
func (t *Tracker) PullFinished(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.pods[uid]
	if s == nil || len(s.pending) == 0 {
		return
	}
	s.pulls = append(s.pulls, Interval{Start: s.pending[0], End: at})
	s.pending = s.pending[1:]
}

// Observe shows the Tracker a status of p generated at now. It notes the
// init container runs the status shows, and answers with the pod's
// Observation the first time every container runs; a terminal status
// drops the pod.
func (t *Tracker) Observe(p *v1.Pod, st *v1.PodStatus, now time.Time) (Observation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.pods[p.UID]
	if s == nil || s.observed {
		return Observation{}, false
	}
	if podspec.IsTerminal(st.Phase) {
		delete(t.pods, p.UID)
		return Observation{}, false
	}
	noteInitRuns(p, st, s.initRuns)
	if !Started(st) {
		return Observation{}, false
	}
	s.observed = true
	total := now.Sub(p.CreationTimestamp.Time)
	var inits time.Duration
	for _, d := range s.initRuns {
		inits += d
	}
	return Observation{Total: total, SLI: total - PullTime(s.pulls) - inits, CountsForSLI: !Stateful(p)}, true
}

// Forget drops what the Tracker keeps of the pod.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
	delete(t.excluded, uid)
}

// Started reports whether every container of the status (init containers
// aside) is running with a start time: upstream's "pod started" for the
// SLI. A status without containers has started.
func Started(st *v1.PodStatus) bool {
	for _, c := range st.ContainerStatuses {
		if c.State.Running == nil || c.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// Stateful reports whether the pod mounts a volume other than the
// ephemeral kinds the SLI allows (secret, configMap, downwardAPI,
// emptyDir, projected, gitRepo, image, generic ephemeral, CSI ephemeral):
// the SLI leaves such pods out.
func Stateful(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		s := v.VolumeSource
		ephemeral := s.Secret != nil || s.ConfigMap != nil || s.DownwardAPI != nil || s.EmptyDir != nil ||
			s.Projected != nil || s.GitRepo != nil || s.Image != nil || s.Ephemeral != nil ||
			(s.CSI != nil && s.CSI.VolumeAttributes["csi.storage.k8s.io/ephemeral"] == "true")
		if !ephemeral {
			return true
		}
	}
	return false
}

// Unschedulable reports whether the pod's PodScheduled condition is False:
// not immediately schedulable, which the SLI leaves out.
func Unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}

// PullTime is how long the pulls took together: the length of the union
// of their intervals, so that time two pulls overlap counts once. An
// interval that ends before it starts counts for nothing.
func PullTime(pulls []Interval) time.Duration {
	sorted := slices.Clone(pulls)
	slices.SortFunc(sorted, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var total time.Duration
	var end time.Time
	for i, p := range sorted {
		if !p.End.After(p.Start) {
			continue
		}
		switch {
		case i == 0 || end.IsZero() || p.Start.After(end):
			total += p.End.Sub(p.Start)
			end = p.End
		case p.End.After(end):
			total += p.End.Sub(end)
			end = p.End
		}
	}
	return total
}

// InitContainerTime is how long the runs of the pod's non-restartable init
// containers that the status shows exited took, each from the runtime's
// start to its end (the current state and the last one).
func InitContainerTime(p *v1.Pod, st *v1.PodStatus) time.Duration {
	runs := map[string]time.Duration{}
	noteInitRuns(p, st, runs)
	var total time.Duration
	for _, d := range runs {
		total += d
	}
	return total
}

// noteInitRuns adds to runs, by container ID (or name and start when the
// runtime gave none), the exited runs of the pod's non-restartable init
// containers that the status shows.
func noteInitRuns(p *v1.Pod, st *v1.PodStatus, runs map[string]time.Duration) {
	for _, cs := range st.InitContainerStatuses {
		if c := initContainer(p, cs.Name); c == nil || podspec.IsSidecar(c) {
			continue
		}
		for _, term := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if term == nil || term.StartedAt.IsZero() || !term.FinishedAt.After(term.StartedAt.Time) {
				continue
			}
			key := term.ContainerID
			if key == "" {
				key = cs.Name + "@" + term.StartedAt.UTC().String()
			}
			runs[key] = term.FinishedAt.Sub(term.StartedAt.Time)
		}
	}
}

func initContainer(p *v1.Pod, name string) *v1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}
