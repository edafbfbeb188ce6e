package fake

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ErrEventsLost ends an events stream whose reader fell more than
// Options.EventQueueSize events behind. It wraps cri.ErrUnavailable, so a
// follower treats it as a broken stream: it relists and follows again.
var ErrEventsLost = fmt.Errorf("container events lost: the subscriber's queue overflowed: %w", cri.ErrUnavailable)

// subscriber is one events stream: a bounded queue that the runtime fills
// under its lock without ever blocking, and that the stream's reader drains.
type subscriber struct {
	limit  int
	notify chan struct{} // capacity 1: "the queue or state changed"
	stop   func() bool   // stops the ctx watch

	mu    sync.Mutex
	queue []*runtimeapi.ContainerEventResponse
	err   error // set once the stream is to end after the queue
	done  bool
}

func newSubscriber(limit int) *subscriber {
	return &subscriber{limit: limit, notify: make(chan struct{}, 1)}
}

func (s *subscriber) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// push queues ev; a full queue ends the stream with ErrEventsLost after the
// events already queued, rather than dropping ev silently.
func (s *subscriber) push(ev *runtimeapi.ContainerEventResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	if len(s.queue) >= s.limit {
		s.done = true
		s.err = fmt.Errorf("%w: more than %d events were not read in time", ErrEventsLost, s.limit)
	} else {
		s.queue = append(s.queue, ev)
	}
	s.signal()
}

// fail ends the stream with err after the events already queued.
func (s *subscriber) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done, s.err = true, err
	}
	s.signal()
}

// next returns the next event, or nil and the stream's final error once the
// queue is drained and the stream is done, or nil, nil when ctx ends.
func (s *subscriber) next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return ev, nil
		}
		done, err := s.done, s.err
		s.mu.Unlock()
		if done {
			return nil, err
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return nil, nil
		}
	}
}

var errNoSubscriber = errors.New("no subscriber")

// GetContainerEvents implements cri.EventSource. Events are those of
// containerd 1.7: CREATED, STARTED, STOPPED and DELETED, for containers and
// for sandboxes (whose events carry the sandbox's ID as container ID), each
// with CreatedAt from the clock, the sandbox's status and the statuses of
// its containers.
//
// The stream subscribes when GetContainerEvents is called, so every event
// after the call is delivered, even if the range starts later. Ranging over
// the sequence again is another stream (recorded as another call), which
// subscribes when that range starts. Each stream has its own queue of at
// most Options.EventQueueSize events, filled without ever blocking the
// runtime; a stream whose reader falls further behind yields the events
// queued and then an error wrapping ErrEventsLost, and ends: events are never
// dropped silently. The sequence ends without an error when ctx ends, and
// with one wrapping ErrClosed when Close is called. A fault injected for
// GetContainerEvents applies when the range starts. Call it with a ctx that
// ends, or range over it: a subscription that is neither read nor cancelled
// holds its queue until Close.
func (r *Runtime) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	// Subscribe before recording, so that a test that sees the call
	// recorded knows the stream gets the events that follow.
	first := r.subscribe(ctx)
	f, err := r.record(GetContainerEvents, &runtimeapi.GetEventsRequest{})
	var ranged atomic.Bool
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		f, err, s := f, err, first
		if ranged.Swap(true) {
			// Another range is another stream, as another RPC would be.
			s = r.subscribe(ctx)
			f, err = r.record(GetContainerEvents, &runtimeapi.GetEventsRequest{})
		}
		if s != nil {
			defer r.unsubscribe(s)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		if s == nil {
			yield(nil, fmt.Errorf("%s: %w", GetContainerEvents, ErrClosed))
			return
		}
		if err := r.applyFault(ctx, GetContainerEvents, f); err != nil {
			if ctx.Err() == nil {
				yield(nil, err)
			}
			return
		}
		for {
			ev, err := s.next(ctx)
			if ev == nil {
				if err != nil && !errors.Is(err, errNoSubscriber) {
					yield(nil, fmt.Errorf("%s: %w", GetContainerEvents, err))
				}
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// subscribe registers a stream that ends (silently) when ctx ends; nil when
// the runtime is closed.
func (r *Runtime) subscribe(ctx context.Context) *subscriber {
	s := newSubscriber(r.queueLimit)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	s.stop = context.AfterFunc(ctx, func() {
		r.mu.Lock()
		delete(r.subs, s)
		r.mu.Unlock()
		s.fail(errNoSubscriber)
	})
	return s
}

// unsubscribe ends a stream whose range is over.
func (r *Runtime) unsubscribe(s *subscriber) {
	s.stop()
	r.mu.Lock()
	delete(r.subs, s)
	r.mu.Unlock()
}

// emitLocked sends an event to every subscriber: containerID's event of
// type t, with the status of sandbox s and of its containers.
func (r *Runtime) emitLocked(now int64, containerID string, s *sandbox, t runtimeapi.ContainerEventType) {
	if len(r.subs) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        containerID,
		ContainerEventType: t,
		CreatedAt:          now,
		PodSandboxStatus:   s.toStatus(),
		ContainersStatuses: make([]*runtimeapi.ContainerStatus, 0, len(s.containers)),
	}
	for _, c := range s.containers {
		ev.ContainersStatuses = append(ev.ContainersStatuses, r.containerStatusLocked(c))
	}
	first := true
	for sub := range r.subs {
		if first {
			sub.push(ev)
			first = false
			continue
		}
		sub.push(proto.CloneOf(ev)) // each stream owns its events
	}
}
