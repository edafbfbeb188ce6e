package agent

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The start gate grants its slots to the oldest waiting pods, whatever
// order they asked in; a paused pod resumes ahead of younger ones; a
// waiter whose context ends leaves the queue without taking a slot.
func TestStartGateOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newStartGate(2)
		ctx := context.Background()
		a, err := g.enter(ctx, 1)
		require.NoError(t, err)
		b, err := g.enter(ctx, 2)
		require.NoError(t, err)

		var order []uint64
		granted := make(chan *ticket)
		wait := func(seq uint64) {
			go func() {
				tk, err := g.enter(ctx, seq)
				if assert.NoError(t, err) {
					granted <- tk
				}
			}()
		}
		for _, seq := range []uint64{5, 3, 4} {
			wait(seq)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancelled := make(chan error)
		go func() { _, err := g.enter(cctx, 0); cancelled <- err }()
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, <-cancelled, context.Canceled, "the oldest of all, but it gave up")

		a.pause() // pod 1 waits for a pull: pod 3 gets its slot
		tk := <-granted
		order = append(order, tk.seq)
		resumed := make(chan error)
		go func() { resumed <- a.resume(ctx) }()
		synctest.Wait()
		b.leave() // pod 1, resuming, goes before pods 4 and 5
		require.NoError(t, <-resumed)
		tk.leave()
		order = append(order, (<-granted).seq)
		a.leave()
		order = append(order, (<-granted).seq)
		assert.Equal(t, []uint64{3, 4, 5}, order)
		a.leave() // twice is once
		var none *ticket
		none.pause()
		assert.NoError(t, none.resume(ctx))
		none.leave()
	})
}
