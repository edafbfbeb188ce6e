package podworkers_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/podworkers"
)

// The start gate grants its slots to the oldest waiting pods, whatever
// order they asked in; a paused pod resumes ahead of younger ones; a
// waiter whose context ends leaves the queue without taking a slot.
func TestStartGateOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := podworkers.NewStartGate(2)
		ctx := context.Background()
		a, err := g.Enter(ctx, 1)
		require.NoError(t, err)
		b, err := g.Enter(ctx, 2)
		require.NoError(t, err)

		var order []uint64
		granted := make(chan *podworkers.Ticket)
		wait := func(seq uint64) {
			go func() {
				tk, err := g.Enter(ctx, seq)
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
		go func() { _, err := g.Enter(cctx, 0); cancelled <- err }()
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, <-cancelled, context.Canceled, "the oldest of all, but it gave up")

		a.Pause() // pod 1 waits for a pull: pod 3 gets its slot
		tk := <-granted
		order = append(order, tk.Seq())
		resumed := make(chan error)
		go func() { resumed <- a.Resume(ctx) }()
		synctest.Wait()
		b.Leave() // pod 1, resuming, goes before pods 4 and 5
		require.NoError(t, <-resumed)
		tk.Leave()
		order = append(order, (<-granted).Seq())
		a.Leave()
		order = append(order, (<-granted).Seq())
		assert.Equal(t, []uint64{3, 4, 5}, order)
		a.Leave() // twice is once
		var none *podworkers.Ticket
		none.Pause()
		assert.NoError(t, none.Resume(ctx))
		none.Leave()
	})
}
