package pleg_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// TestScenarioWorkerWokenByContainerDied: a pod worker woken by a
// ContainerDied event syncs on a status that shows the container exited,
// with either PLEG (Evented falling back to relists), whether the events go
// through the channel or to OnEvents, and however the goroutines are
// scheduled: here the consumer function lets the worker run to the end of
// its sync before it returns to the relist, the worst order a node can see.
//
// The worker waits for a status newer than the end of its previous sync,
// which the global timestamp of the relist before already satisfies. Only
// the relist's status being in the cache before its events are handed over
// keeps the worker from syncing on the state before the exit, which it
// would then notice only at its next resync, a minute later.
func TestScenarioWorkerWokenByContainerDied(t *testing.T) {
	for _, c := range []struct {
		name              string
		evented, onEvents bool
	}{
		{"generic", false, false},
		{"generic,onevents", false, true},
		{"evented-fallback", true, false},
		{"evented-fallback,onevents", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { workerWokenByContainerDied(t, c.evented, c.onEvents) })
		})
	}
}

func workerWokenByContainerDied(t *testing.T, evented, onEvents bool) {
	n := newNode(t)
	sb := n.runPod("u1")
	app := n.startContainer("u1", sb, "app")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "pod-u1", Namespace: "default"}}
	cache := pleg.NewCache()

	// The pod worker reads the app container's state from the cache in
	// each sync, after waiting for a status newer than its last sync.
	var (
		mu   sync.Mutex
		seen []string
	)
	workers, err := podworkers.New(podworkers.Options{
		Clock: n.clk,
		Syncer: podworkers.SyncerFuncs{SyncPodFunc: func(_ context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
			st, err := cache.Get(pod.UID)
			assert.NoError(t, err)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s at %v", st.ContainerByName("app").GetState(), st.Timestamp.Sub(start)))
			mu.Unlock()
			return false, nil
		}},
		StatusWaiter: podworkers.StatusWaiterFunc(func(ctx context.Context, uid types.UID, t time.Time) error {
			_, err := cache.GetNewerThan(ctx, uid, t)
			return err
		}),
	})
	require.NoError(t, err)
	// syncs returns the states the syncs saw since the last call.
	syncs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		s := seen
		seen = nil
		return s
	}
	update := func(typ podworkers.UpdateType) {
		workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: typ, Pod: pod})
	}

	// The consumer syncs the pod on every event but ContainerRemoved. As
	// the consumer function, when the test relists, it also waits until the
	// worker is done (or blocked) before it returns to the relist.
	consume := func(events []pleg.Event) {
		for _, ev := range events {
			if ev.Type != pleg.ContainerRemoved {
				update(podworkers.SyncPodSync)
				return
			}
		}
	}
	var testRelists atomic.Bool
	consumeNow := func(events []pleg.Event) {
		consume(events)
		if testRelists.Load() {
			synctest.Wait()
		}
	}
	var p interface {
		Run(context.Context) error
		Relist(context.Context) error
		Events() <-chan pleg.Event
	}
	if evented {
		// A runtime without the events API: the PLEG falls back to
		// relisting at once.
		n.rt.InjectFault(fake.GetContainerEvents, fake.Fault{Err: fmt.Errorf("get container events: %w", cri.ErrUnimplemented)})
		opts := pleg.EventedOptions{Runtime: n.rt, Cache: cache, Clock: n.clk}
		if onEvents {
			opts.OnEvents = consumeNow
		}
		p, err = pleg.NewEvented(opts)
	} else {
		opts := pleg.GenericOptions{Runtime: n.rt, Cache: cache, Clock: n.clk}
		if onEvents {
			opts.OnEvents = consumeNow
		}
		p, err = pleg.NewGeneric(opts)
	}
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	update(podworkers.SyncPodCreate)
	wg.Go(func() { assert.NoError(t, workers.Run(ctx)) })
	wg.Go(func() { assert.NoError(t, p.Run(ctx)) })
	wg.Go(func() {
		for ev := range p.Events() { // never written with OnEvents
			consume([]pleg.Event{ev})
		}
	})
	synctest.Wait()
	if e, ok := p.(*pleg.Evented); ok {
		require.Equal(t, pleg.StreamFallback, e.StreamState())
	}
	// The test relists 100ms apart, between the PLEG's own relists.
	relist := func() {
		n.step(100 * time.Millisecond)
		testRelists.Store(true)
		require.NoError(t, p.Relist(t.Context()))
		testRelists.Store(false)
		synctest.Wait()
	}
	// The first sync, and one for each event of the first relist unless
	// they coalesced; each may wait for a status newer than the sync before
	// it, which is the next relist's.
	relist()
	relist()
	first := syncs()
	require.NotEmpty(t, first)
	for _, s := range first {
		require.Equal(t, "CONTAINER_RUNNING at 0s", s)
	}

	// A relist that sees nothing new moves the cache's global timestamp
	// past the end of the worker's last sync; then the container exits and
	// the next relist reports it.
	relist()
	require.Empty(t, syncs(), "nothing changed")
	require.NoError(t, n.rt.StopContainer(t.Context(), app, 30))
	relist()
	assert.Equal(t, []string{"CONTAINER_EXITED at 400ms"}, syncs(),
		"the sync for ContainerDied sees the exit, as of the relist that found it")
}
