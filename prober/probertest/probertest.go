package probertest

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/prober"
)

// Call is one recorded probe run.
type Call struct {
	PodUID      types.UID
	Container   string
	ContainerID string
	Type        prober.ProbeType
}

type scriptKey struct {
	container string
	typ       prober.ProbeType
}

type scripted struct {
	out prober.Outcome
	err error
}

// Runner is a scripted prober.ProbeRunner.
type Runner struct {
	mu     sync.Mutex
	script map[scriptKey]scripted
	calls  []Call
	// ProbeFunc, if set, replaces the script for every call.
	ProbeFunc func(ctx context.Context, t prober.Target) (prober.Outcome, error)
}

var _ prober.ProbeRunner = (*Runner)(nil)

// NewRunner returns a Runner whose probes all succeed until scripted.
func NewRunner() *Runner { return &Runner{script: map[scriptKey]scripted{}} }

// Set scripts the outcome of the named container's probe of type t.
func (r *Runner) Set(container string, t prober.ProbeType, out prober.Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script[scriptKey{container, t}] = scripted{out, err}
}

// Probe implements prober.ProbeRunner.
func (r *Runner) Probe(ctx context.Context, t prober.Target) (prober.Outcome, error) {
	r.mu.Lock()
	c := Call{ContainerID: t.ContainerID, Type: t.Type}
	if t.Pod != nil {
		c.PodUID = t.Pod.UID
	}
	if t.Container != nil {
		c.Container = t.Container.Name
	}
	r.calls = append(r.calls, c)
	s, ok := r.script[scriptKey{c.Container, t.Type}]
	f := r.ProbeFunc
	r.mu.Unlock()
	if f != nil {
		return f(ctx, t)
	}
	if !ok {
		return prober.Outcome{Result: prober.Success}, nil
	}
	return s.out, s.err
}

// Calls returns a copy of the recorded calls.
func (r *Runner) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Statuses is a prober.StatusProvider backed by a map.
type Statuses struct {
	mu sync.Mutex
	m  map[types.UID]v1.PodStatus
}

var _ prober.StatusProvider = (*Statuses)(nil)

// NewStatuses returns an empty Statuses.
func NewStatuses() *Statuses { return &Statuses{m: map[types.UID]v1.PodStatus{}} }

// Set stores a deep copy of the pod's status.
func (s *Statuses) Set(uid types.UID, st v1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[uid] = *st.DeepCopy()
}

// Delete forgets the pod's status.
func (s *Statuses) Delete(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}

// GetPodStatus implements prober.StatusProvider with a deep copy.
func (s *Statuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *st.DeepCopy(), true
}
