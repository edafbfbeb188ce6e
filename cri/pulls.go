package cri

import (
	"context"
	"fmt"
)

// PullSlots bounds how many image pulls run at once on a node, as
// upstream kubelet's image puller does: one at a time by default
// (serializeImagePulls: true), at most maxParallelImagePulls with
// serializeImagePulls: false, or no bound. Waiters are served in the order
// they came. A nil *PullSlots has no bound.
type PullSlots struct {
	slots chan struct{}
}

// NewPullSlots returns the bound of n pulls at once; n <= 0 means no bound
// (nil).
func NewPullSlots(n int) *PullSlots {
	if n <= 0 {
		return nil
	}
	return &PullSlots{slots: make(chan struct{}, n)}
}

// Acquire waits for a slot, or for ctx to end. Each Acquire that returned
// nil is paired with one Release.
func (p *PullSlots) Acquire(ctx context.Context) error {
	if p == nil {
		return nil
	}
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting to pull an image: %w", ctx.Err())
	}
}

// Release gives a slot back.
func (p *PullSlots) Release() {
	if p == nil {
		return
	}
	<-p.slots
}
