package podworkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestIdlePodsHoldNoGoroutine checks the design promise: a worker goroutine
// exists only while its pod has work, so synced, idle pods cost only their
// state in the Machine.
func TestIdlePodsHoldNoGoroutine(t *testing.T) {
	const pods = 1000
	w, err := New(Options{
		Syncer:       SyncerFuncs{},
		StatusWaiter: StatusWaiterFunc(func(context.Context, types.UID, time.Time) error { return nil }),
		Clock:        clocktesting.NewFakeClock(time.Unix(0, 0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for i := range pods {
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(fmt.Sprintf("p%d", i))})
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := w.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live != 0 || len(w.m.workers) != 0 || len(w.inflight) != 0 {
		t.Errorf("idle: %d goroutines, %d workers, %d in flight", w.live, len(w.m.workers), len(w.inflight))
	}
	if w.m.Len() != pods || len(w.m.queue) != pods {
		t.Errorf("%d pods known, %d queued for resync; want %d", w.m.Len(), len(w.m.queue), pods)
	}
}
