package podworkers

import (
	"container/heap"
	"context"
	"sync"
)

// DefaultStartSlots is how many starting pods a StartGate the agent builds
// lets through their syncs at once: enough to keep two cores and a
// runtime's round trips busy, few enough that the first pods of a burst
// finish first.
const DefaultStartSlots = 16

// StartGate lets a bounded number of starting pods (pods not yet seen
// Running) through their syncs at once, the pod admitted first going first.
// Without it, the syncs of a burst of pods (a node's start with 500 static
// pods) advance in waves: every pod's sandbox, then every pod's container,
// and the first pod turns Running near the end of the burst. With it, the
// pods start in admission order at the same total pace. A pod that waits
// for something other than the node's CPU and runtime (its volumes, an
// image pull) gives its slot back while it waits and takes it again, ahead
// of the pods admitted after it (Ticket.Pause and Resume, through
// TicketFromContext).
//
// Workers take a slot around each SyncPod of a pod that Options.Starting
// says is starting. It is safe for concurrent use.
type StartGate struct {
	mu      sync.Mutex
	free    int
	waiting waiters
}

// NewStartGate returns a gate of slots slots; fewer than one means
// DefaultStartSlots.
func NewStartGate(slots int) *StartGate {
	if slots < 1 {
		slots = DefaultStartSlots
	}
	return &StartGate{free: slots}
}

// waiter is a pod waiting for a slot: granted is closed when it has one.
type waiter struct {
	seq     uint64
	granted chan struct{}
	index   int // in the heap; -1 once out of it
}

// waiters is a min-heap of waiters by admission order.
type waiters []*waiter

func (w waiters) Len() int           { return len(w) }
func (w waiters) Less(i, j int) bool { return w[i].seq < w[j].seq }
func (w waiters) Swap(i, j int) {
	w[i], w[j] = w[j], w[i]
	w[i].index, w[j].index = i, j
}
func (w *waiters) Push(x any) {
	it := x.(*waiter)
	it.index = len(*w)
	*w = append(*w, it)
}
func (w *waiters) Pop() any {
	old := *w
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*w = old[:len(old)-1]
	return it
}

// acquire waits for a slot for the pod admitted seq-th, older pods first.
func (g *StartGate) acquire(ctx context.Context, seq uint64) error {
	g.mu.Lock()
	if g.free > 0 && g.waiting.Len() == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	w := &waiter{seq: seq, granted: make(chan struct{})}
	heap.Push(&g.waiting, w)
	g.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if w.index < 0 { // granted as ctx ended: pass the slot on
			g.releaseLocked()
		} else {
			heap.Remove(&g.waiting, w.index)
		}
		return ctx.Err()
	}
}

// release gives a slot back, to the oldest waiting pod if any.
func (g *StartGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *StartGate) releaseLocked() {
	if g.waiting.Len() == 0 {
		g.free++
		return
	}
	close(heap.Pop(&g.waiting).(*waiter).granted)
}

// Ticket is a starting pod's hold on a slot for one sync; a nil Ticket (a
// pod that has run before) holds nothing and every method is a no-op.
type Ticket struct {
	gate *StartGate
	seq  uint64
	held bool
}

// Enter takes a slot for the pod admitted seq-th, for one sync, waiting
// behind older pods; it returns ctx's error if ctx ends first.
func (g *StartGate) Enter(ctx context.Context, seq uint64) (*Ticket, error) {
	if err := g.acquire(ctx, seq); err != nil {
		return nil, err
	}
	return &Ticket{gate: g, seq: seq, held: true}, nil
}

// Leave gives the slot back at the end of the sync. Twice is once.
func (t *Ticket) Leave() {
	if t != nil && t.held {
		t.held = false
		t.gate.release()
	}
}

// Pause gives the slot back while the pod waits for something other than
// the node's CPU and runtime (its volumes, an image pull).
func (t *Ticket) Pause() { t.Leave() }

// Resume takes a slot again after Pause, ahead of younger pods.
func (t *Ticket) Resume(ctx context.Context) error {
	if t == nil || t.held {
		return nil
	}
	if err := t.gate.acquire(ctx, t.seq); err != nil {
		return err
	}
	t.held = true
	return nil
}

type ticketKey struct{}

// contextWithTicket is the context of a sync that holds t.
func contextWithTicket(ctx context.Context, t *Ticket) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, ticketKey{}, t)
}

// TicketFromContext returns the Ticket the sync whose context is ctx holds,
// or nil (a pod not starting, or no gate): a Syncer pauses it while the pod
// waits for something other than the node.
func TicketFromContext(ctx context.Context) *Ticket {
	t, _ := ctx.Value(ticketKey{}).(*Ticket)
	return t
}

// Seq is the admission order the Ticket was taken for.
func (t *Ticket) Seq() uint64 { return t.seq }
