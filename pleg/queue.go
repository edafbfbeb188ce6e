package pleg

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxPendingPerPod is how many undelivered events one pod may hold before they
// collapse into a single PodSync. A relist of a pod with a sandbox and a few
// containers produces fewer, so events only collapse when the consumer has
// fallen behind by several relists.
const maxPendingPerPod = 16

// podQueue is the pending events of one pod.
type podQueue struct {
	events []Event
	// collapsed is set once the events were replaced by one PodSync; the
	// pod then absorbs further events until the PodSync is delivered.
	collapsed bool
}

// eventQueue holds undelivered events per pod, pods in the order their first
// pending event arrived, a pod's events in the order they were pushed. It
// never drops an event without replacing it: when a pod's pending events
// would exceed maxPendingPerPod they collapse into one PodSync for the pod,
// which the consumer handles by syncing the pod against the cache, the same
// thing it does for any other event. It holds at most maxPendingPerPod events
// per pod with pending events. Not safe for concurrent use.
type eventQueue struct {
	pods  map[types.UID]*podQueue
	order []types.UID // pods with pending events; order[head:] is the queue
	head  int
	// coalesced counts events not delivered as themselves (absorbed by a
	// duplicate or a PodSync), for the metrics hook.
	coalesced int
}

func newEventQueue() *eventQueue {
	return &eventQueue{pods: make(map[types.UID]*podQueue)}
}

// push adds an event and returns how many events it coalesced (0 when the
// event was queued as itself).
func (q *eventQueue) push(ev Event) int {
	p := q.pods[ev.PodUID]
	if p == nil {
		p = &podQueue{}
		q.pods[ev.PodUID] = p
		q.order = append(q.order, ev.PodUID)
	}
	n := 0
	switch {
	case p.collapsed:
		n = 1
	case ev.Type == PodSync:
		n = len(p.events)
		p.events = append(p.events[:0], ev)
		p.collapsed = true
	case containsEvent(p.events, ev):
		n = 1
	case len(p.events) == maxPendingPerPod:
		n = len(p.events)
		p.events = append(p.events[:0], Event{PodUID: ev.PodUID, Type: PodSync})
		p.collapsed = true
	default:
		p.events = append(p.events, ev)
	}
	q.coalesced += n
	return n
}

func containsEvent(events []Event, ev Event) bool {
	for _, e := range events {
		if e == ev {
			return true
		}
	}
	return false
}

// peek returns the next event without removing it.
func (q *eventQueue) peek() (Event, bool) {
	if q.head == len(q.order) {
		return Event{}, false
	}
	return q.pods[q.order[q.head]].events[0], true
}

// pop removes the event peek returned.
func (q *eventQueue) pop() {
	uid := q.order[q.head]
	p := q.pods[uid]
	p.events[0] = Event{}
	p.events = p.events[1:]
	if len(p.events) > 0 {
		return
	}
	delete(q.pods, uid)
	q.order[q.head] = ""
	q.head++
	if q.head == len(q.order) {
		q.order, q.head = q.order[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.order) {
		n := copy(q.order, q.order[q.head:])
		clear(q.order[n:])
		q.order, q.head = q.order[:n], 0
	}
}

// len returns the number of pending events.
func (q *eventQueue) len() int {
	n := 0
	for _, p := range q.pods {
		n += len(p.events)
	}
	return n
}

// outbox is the PLEG's side of the events channel: producers push into the
// coalescing queue and never block; one goroutine (deliver) moves events from
// the queue to the unbuffered channel as fast as the consumer takes them.
//
// With a consumer function (OnEvents), push hands the events to it instead,
// synchronously, and the channel is never written.
type outbox struct {
	mu       sync.Mutex
	q        *eventQueue
	wake     chan struct{} // capacity 1: "the queue may be non-empty"
	ch       chan Event
	metrics  Metrics
	onEvents func([]Event)
}

func newOutbox(m Metrics, onEvents func([]Event)) *outbox {
	return &outbox{q: newEventQueue(), wake: make(chan struct{}, 1), ch: make(chan Event), metrics: m, onEvents: onEvents}
}

// direct reports whether events go to a consumer function rather than the
// channel.
func (o *outbox) direct() bool { return o.onEvents != nil }

// publish makes a pod's new state known: update writes it to the cache and
// events are pushed, in the order the consumer needs. A channel consumer may
// read the cache as soon as an event arrives, so the cache comes first. A
// consumer function is told first, so that whoever waits on the cache for
// the new state finds that the events describing it were handed over.
func (o *outbox) publish(update func(), events ...Event) {
	if o.direct() {
		o.push(events...)
		update()
		return
	}
	update()
	o.push(events...)
}

// push queues events, or hands them to the consumer function; it never
// blocks (but for the consumer function).
func (o *outbox) push(events ...Event) {
	if len(events) == 0 {
		return
	}
	if o.onEvents != nil {
		// A copy, so that the caller's buffer stays its own.
		o.onEvents(slices.Clone(events))
		return
	}
	coalesced := 0
	o.mu.Lock()
	for _, ev := range events {
		coalesced += o.q.push(ev)
	}
	o.mu.Unlock()
	if coalesced > 0 {
		o.metrics.EventsCoalesced(coalesced)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// pending returns the number of queued, undelivered events.
func (o *outbox) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.q.len()
}

// deliver sends queued events on the channel until ctx ends, then closes the
// channel. Events still queued then are dropped with the PLEG.
func (o *outbox) deliver(ctx context.Context) {
	defer close(o.ch)
	for {
		o.mu.Lock()
		ev, ok := o.q.peek()
		o.mu.Unlock()
		if !ok {
			select {
			case <-o.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case o.ch <- ev:
			o.mu.Lock()
			o.popDelivered(ev)
			o.mu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// popDelivered removes ev from the head of the queue, unless a push collapsed
// the pod's events into a PodSync meanwhile: then ev was delivered ahead of
// the PodSync, which stays queued and covers it.
func (o *outbox) popDelivered(ev Event) {
	if head, ok := o.q.peek(); ok && head == ev {
		o.q.pop()
	}
}
