package cri_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestPullSlots(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want int // most pulls seen at once, of six
	}{
		{"serialised", 1, 1},
		{"three at once", 3, 3},
		{"no bound", 0, 6},
		{"negative is no bound", -1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := cri.NewPullSlots(tc.n)
				var mu sync.Mutex
				running, most := 0, 0
				release := make(chan struct{})
				var wg sync.WaitGroup
				for range 6 {
					wg.Go(func() {
						require.NoError(t, p.Acquire(t.Context()))
						mu.Lock()
						running++
						most = max(most, running)
						mu.Unlock()
						<-release
						mu.Lock()
						running--
						mu.Unlock()
						p.Release()
					})
				}
				synctest.Wait()
				mu.Lock()
				assert.Equal(t, tc.want, most)
				mu.Unlock()
				close(release)
				wg.Wait()
			})
		})
	}
}

func TestPullSlotsAcquireEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := cri.NewPullSlots(1)
		require.NoError(t, p.Acquire(t.Context()))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- p.Acquire(ctx) }()
		synctest.Wait()
		cancel()
		err := <-done
		assert.True(t, errors.Is(err, context.Canceled), "%v", err)
		p.Release()
		require.NoError(t, p.Acquire(t.Context()), "the slot given back is free")
	})
}
