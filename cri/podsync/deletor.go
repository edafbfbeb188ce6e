package podsync

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultDeletorBuffer is how many removals a Deletor holds by default
// before it drops requests: upstream's containerDeletorBufferLimit.
const DefaultDeletorBuffer = 50

// ContainerRemover removes one dead container. *Syncer implements it
// (RemoveDeadContainer).
type ContainerRemover interface {
	RemoveDeadContainer(ctx context.Context, c *runtimeapi.ContainerStatus) error
}

var _ ContainerRemover = (*Syncer)(nil)

// ContainerRemoverFunc adapts a function to ContainerRemover.
type ContainerRemoverFunc func(ctx context.Context, c *runtimeapi.ContainerStatus) error

// RemoveDeadContainer calls f.
func (f ContainerRemoverFunc) RemoveDeadContainer(ctx context.Context, c *runtimeapi.ContainerStatus) error {
	return f(ctx, c)
}

var _ ContainerRemover = ContainerRemoverFunc(nil)

// DeletorOptions configure a Deletor.
type DeletorOptions struct {
	// Remover removes each container; required.
	Remover ContainerRemover
	// Buffer is how many removals may wait; 0 means DefaultDeletorBuffer.
	Buffer int
	// Logger receives the dropped requests and the failed removals; nil
	// discards.
	Logger *slog.Logger
}

// Deletor removes dead containers off its caller's goroutine, one at a
// time, as upstream kubelet's pod container deletor: the caller (the pod
// lifecycle event handler) hands it what DeadContainersToRemove chose and
// goes on at once.
//
// Enqueue never blocks. A container waiting or being removed is not queued
// again;
// when Buffer containers wait, further requests are dropped with a log line
// ("Failed to issue the request to remove container"), as upstream: the
// container garbage collection removes them later. A failed removal is
// logged ("DeleteContainer returned error") and not retried.
//
// NewDeletor starts nothing; Run removes until its context ends. Enqueue
// is safe for concurrent use, before and while Run runs; what is queued
// when Run returns is left.
type Deletor struct {
	remover ContainerRemover
	log     *slog.Logger
	queue   chan *runtimeapi.ContainerStatus

	mu      sync.Mutex
	pending map[string]bool // IDs queued or being removed
}

// NewDeletor returns a Deletor; an Options without Remover, or with a
// negative Buffer, is an error.
func NewDeletor(opts DeletorOptions) (*Deletor, error) {
	if opts.Remover == nil {
		return nil, fmt.Errorf("podsync: deletor: Remover: %w", ErrMissingDependency)
	}
	if opts.Buffer < 0 {
		return nil, fmt.Errorf("podsync: deletor: Buffer %d: %w", opts.Buffer, ErrInvalidOptions)
	}
	if opts.Buffer == 0 {
		opts.Buffer = DefaultDeletorBuffer
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deletor{remover: opts.Remover, log: log, queue: make(chan *runtimeapi.ContainerStatus, opts.Buffer),
		pending: map[string]bool{}}, nil
}

// Enqueue asks for the removal of the containers, in order, and returns
// how many were queued: those waiting or being removed are skipped, and those that
// find the queue full are dropped (logged).
func (d *Deletor) Enqueue(cs ...*runtimeapi.ContainerStatus) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range cs {
		id := c.GetId()
		if d.pending[id] {
			continue
		}
		select {
		case d.queue <- c:
			d.pending[id] = true
			n++
		default:
			d.log.Warn("Failed to issue the request to remove container", "containerID", id)
		}
	}
	return n
}

// Run removes the queued containers one at a time until ctx ends, and
// returns nil then. A removal in progress when ctx ends sees it end.
func (d *Deletor) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-d.queue:
			if err := d.remover.RemoveDeadContainer(ctx, c); err != nil {
				d.log.Warn("DeleteContainer returned error", "containerID", c.GetId(), "err", err)
			}
			d.mu.Lock()
			delete(d.pending, c.GetId())
			d.mu.Unlock()
		}
	}
}
