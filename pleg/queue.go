package pleg

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxPendingPerPod is how many undelivered events one pod may hold before they
// collapse into a single PodSync. A relist of a pod with a sandbox and a few
// containers produces fewer, so events only collapse when the consumer has
// fallen behind by several relists.
const maxPendingPerPod = 16

// keptQueueCap is the largest capacity of a pod's queue that is kept for
// reuse once the pod's events are delivered: enough for a relist's events of
// a pod with a few containers, so that the kept queues cost a few hundred
// bytes per pod at most.
const keptQueueCap = 4

// podQueue is the pending events of one pod: events[head:].
type podQueue struct {
	events []Event
	head   int
	// collapsed is set once the events were replaced by one PodSync; the
	// pod then absorbs further events until the PodSync is delivered.
	collapsed bool
}

func (p *podQueue) pending() []Event { return p.events[p.head:] }

// replace makes ev the only pending event.
func (p *podQueue) replace(ev Event) {
	clear(p.events)
	p.events, p.head = append(p.events[:0], ev), 0
}

// add appends ev to the pending events, moving them to the front of the
// array first when it is full, so that a pod whose queue never empties does
// not grow it.
func (p *podQueue) add(ev Event) {
	if p.head > 0 && len(p.events) == cap(p.events) {
		n := copy(p.events, p.events[p.head:])
		clear(p.events[n:])
		p.events, p.head = p.events[:n], 0
	}
	p.events = append(p.events, ev)
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
	// free holds the queues of pods whose events were all delivered, for
	// the next pods to have events: a relist in which every pod changed
	// then allocates no queue. Only small ones are kept (see pop).
	free []*podQueue
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
		if n := len(q.free); n > 0 {
			p, q.free = q.free[n-1], q.free[:n-1]
		} else {
			p = &podQueue{}
		}
		q.pods[ev.PodUID] = p
		q.order = append(q.order, ev.PodUID)
	}
	n := 0
	pending := p.pending()
	switch {
	case p.collapsed:
		n = 1
	case ev.Type == PodSync:
		n = len(pending)
		p.replace(ev)
		p.collapsed = true
	case containsEvent(pending, ev):
		n = 1
	case len(pending) == maxPendingPerPod:
		n = len(pending)
		p.replace(Event{PodUID: ev.PodUID, Type: PodSync})
		p.collapsed = true
	default:
		p.add(ev)
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
	p := q.pods[q.order[q.head]]
	return p.events[p.head], true
}

// pop removes the event peek returned.
func (q *eventQueue) pop() {
	uid := q.order[q.head]
	p := q.pods[uid]
	p.events[p.head] = Event{}
	p.head++
	if p.head < len(p.events) {
		return
	}
	delete(q.pods, uid)
	if cap(p.events) <= keptQueueCap {
		*p = podQueue{events: p.events[:0]}
		q.free = append(q.free, p)
	}
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
		n += len(p.pending())
	}
	return n
}

// outbox is the PLEG's side of the events channel: producers push into the
// coalescing queue and never block; one goroutine (deliver) moves events from
// the queue to the unbuffered channel as fast as the consumer takes them.
//
// With a consumer function (OnEvents), push hands the events to it instead,
// synchronously, and the channel is never written.
//
// Either way, producers write a pod's status to the cache before they push
// the pod's events (see relister.handOver): whoever acts on an event finds
// the cache at least as new as what produced it.
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

// push queues events, or hands them to the consumer function; it never
// blocks (but for the consumer function). The consumer function gets events
// itself, to keep: the caller gives the slice up.
func (o *outbox) push(events ...Event) {
	if len(events) == 0 {
		return
	}
	if o.onEvents != nil {
		o.onEvents(events)
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
