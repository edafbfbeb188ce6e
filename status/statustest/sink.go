package statustest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/status"
)

// Op names a Sink method.
type Op string

// The Sink's operations.
const (
	OpGet    Op = "Get"
	OpUpdate Op = "Update"
	OpDelete Op = "Delete"
)

// Call is one recorded call to the Sink.
type Call struct {
	Op Op
	// UID, Namespace and Name are those of the pod passed in.
	UID             types.UID
	Namespace, Name string
	// Status is the status written by an Update.
	Status v1.PodStatus
	// Err is what the call returned.
	Err error
}

// String renders the call as "Update ns/name uid phase=Running -> ok".
func (c Call) String() string {
	s := fmt.Sprintf("%s %s/%s %s", c.Op, c.Namespace, c.Name, c.UID)
	if c.Op == OpUpdate {
		s += " phase=" + string(c.Status.Phase)
	}
	if c.Err != nil {
		return s + " -> " + c.Err.Error()
	}
	return s + " -> ok"
}

// Sink is an in-memory status.Sink. The zero value is ready to use and holds
// no pods.
type Sink struct {
	// Fail, when set, is asked before every call; a non-nil error is
	// returned instead of doing the call.
	Fail func(op Op, pod *v1.Pod) error
	// Hang, when set, is asked before every call; true makes the call
	// block until its ctx ends and return ctx's error.
	Hang func(op Op, pod *v1.Pod) bool

	mu      sync.Mutex
	pods    map[string]*v1.Pod // by namespace/name
	rv      int
	calls   []Call
	changed chan struct{}
	holding bool
	held    map[types.UID]chan struct{}
}

var _ status.Sink = (*Sink)(nil)

func key(ns, name string) string { return ns + "/" + name }

// Add stores a copy of pod, as if created in the API server.
func (s *Sink) Add(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeLocked(pod.DeepCopy())
}

func (s *Sink) storeLocked(p *v1.Pod) {
	if s.pods == nil {
		s.pods = make(map[string]*v1.Pod)
	}
	s.rv++
	p.ResourceVersion = strconv.Itoa(s.rv)
	s.pods[key(p.Namespace, p.Name)] = p
}

// Pod returns a copy of the stored pod.
func (s *Sink) Pod(namespace, name string) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Calls returns the recorded calls in the order they returned.
func (s *Sink) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsOf returns the recorded calls of one operation.
func (s *Sink) CallsOf(op Op) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Wait blocks until cond holds for the recorded calls or ctx ends. cond is
// called without the Sink's lock held, so it may call the Sink's methods.
func (s *Sink) Wait(ctx context.Context, cond func(calls []Call) bool) error {
	for {
		s.mu.Lock()
		calls := s.calls[:len(s.calls):len(s.calls)]
		ch := s.changedLocked()
		s.mu.Unlock()
		if cond(calls) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for sink calls: %w", ctx.Err())
		}
	}
}

func (s *Sink) changedLocked() chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// Hold makes every later Update wait until Release names its pod (or its
// ctx ends); Hold(false) releases them all and stops holding.
func (s *Sink) Hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = on
	if !on {
		for uid, ch := range s.held {
			close(ch)
			delete(s.held, uid)
		}
	}
}

// Held returns the UIDs of the pods whose Update is waiting.
func (s *Sink) Held() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]types.UID, 0, len(s.held))
	for uid := range s.held {
		out = append(out, uid)
	}
	return out
}

// Release lets the held Update of the pod proceed.
func (s *Sink) Release(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.held[uid]; ok {
		close(ch)
		delete(s.held, uid)
	}
}

// begin applies Fail and Hang; it returns a non-nil error to return.
func (s *Sink) begin(ctx context.Context, op Op, pod *v1.Pod) error {
	if s.Fail != nil {
		if err := s.Fail(op, pod); err != nil {
			return err
		}
	}
	if s.Hang != nil && s.Hang(op, pod) {
		<-ctx.Done()
		return ctx.Err()
	}
	if op == OpUpdate {
		s.mu.Lock()
		if s.holding {
			if s.held == nil {
				s.held = make(map[types.UID]chan struct{})
			}
			ch := make(chan struct{})
			s.held[pod.UID] = ch
			s.notifyLocked()
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				s.Release(pod.UID)
				return ctx.Err()
			}
		} else {
			s.mu.Unlock()
		}
	}
	return nil
}

func (s *Sink) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

func (s *Sink) recordLocked(c Call) {
	s.calls = append(s.calls, c)
	s.notifyLocked()
}

// GetPod implements status.Sink: the stored pod of the same namespace and
// name (for a static pod, its mirror pod).
func (s *Sink) GetPod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	err := s.begin(ctx, OpGet, pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out *v1.Pod
	if err == nil {
		if p, ok := s.pods[key(pod.Namespace, pod.Name)]; ok {
			out = p.DeepCopy()
		} else {
			err = fmt.Errorf("get pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
		}
	}
	s.recordLocked(Call{Op: OpGet, UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Err: err})
	return out, err
}

// UpdatePodStatus implements status.Sink: it replaces the stored pod's
// status when its UID matches.
func (s *Sink) UpdatePodStatus(ctx context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	err := s.begin(ctx, OpUpdate, pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out *v1.Pod
	if err == nil {
		p, ok := s.pods[key(pod.Namespace, pod.Name)]
		if !ok || p.UID != pod.UID {
			err = fmt.Errorf("update pod status %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
		} else {
			np := p.DeepCopy()
			np.Status = *st.DeepCopy()
			s.storeLocked(np)
			out = np.DeepCopy()
		}
	}
	s.recordLocked(Call{Op: OpUpdate, UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Status: *st.DeepCopy(), Err: err})
	return out, err
}

// DeletePod implements status.Sink: it removes the stored pod when its UID
// matches (the precondition).
func (s *Sink) DeletePod(ctx context.Context, pod *v1.Pod) error {
	err := s.begin(ctx, OpDelete, pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		p, ok := s.pods[key(pod.Namespace, pod.Name)]
		if !ok || p.UID != pod.UID {
			err = fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
		} else {
			delete(s.pods, key(pod.Namespace, pod.Name))
		}
	}
	s.recordLocked(Call{Op: OpDelete, UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Err: err})
	return err
}
