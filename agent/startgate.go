package agent

import (
	"container/heap"
	"context"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// startSlots is how many pods may be in a sync at once while they start:
// enough to keep two cores and a runtime's round trips busy, few enough
// that the first pods of a burst finish first.
const startSlots = 16

// startGate lets a bounded number of starting pods (pods not yet seen
// Running) through their syncs at once, the pod admitted first going first.
// Without it, the syncs of a burst of pods (a node's start with 500 static
// pods) advance in waves: every pod's sandbox, then every pod's container,
// and the first pod turns Running near the end of the burst. With it, the
// pods start in admission order at the same total pace. A pod that waits
// for something other than the node's CPU and runtime (its volumes, an
// image pull) gives its slot back while it waits and takes it again, ahead
// of the pods admitted after it.
type startGate struct {
	mu      sync.Mutex
	free    int
	waiting waiters
}

func newStartGate(slots int) *startGate { return &startGate{free: slots} }

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
func (g *startGate) acquire(ctx context.Context, seq uint64) error {
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
func (g *startGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *startGate) releaseLocked() {
	if g.waiting.Len() == 0 {
		g.free++
		return
	}
	close(heap.Pop(&g.waiting).(*waiter).granted)
}

// ticket is a starting pod's hold on a slot for one sync; a nil ticket
// (a pod that has run before) holds nothing and every method is a no-op.
type ticket struct {
	gate *startGate
	seq  uint64
	held bool
}

// enter takes a slot for the pod admitted seq-th, for one sync.
func (g *startGate) enter(ctx context.Context, seq uint64) (*ticket, error) {
	if err := g.acquire(ctx, seq); err != nil {
		return nil, err
	}
	return &ticket{gate: g, seq: seq, held: true}, nil
}

// leave gives the slot back at the end of the sync.
func (t *ticket) leave() {
	if t != nil && t.held {
		t.held = false
		t.gate.release()
	}
}

// pause gives the slot back while the pod waits for something else.
func (t *ticket) pause() { t.leave() }

// resume takes a slot again after pause, ahead of younger pods.
func (t *ticket) resume(ctx context.Context) error {
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

func withTicket(ctx context.Context, t *ticket) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, ticketKey{}, t)
}

func ticketFrom(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}

// pullPausing is the runtime as the pod syncer sees it: a pull gives the
// starting pod's slot back while the image downloads.
type pullPausing struct{ Runtime }

// PullImage implements cri.ImageService.
func (r pullPausing) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	t := ticketFrom(ctx)
	t.pause()
	ref, err := r.Runtime.PullImage(ctx, image, auth, sandbox)
	if rerr := t.resume(ctx); rerr != nil && err == nil {
		err = rerr
	}
	return ref, err
}
