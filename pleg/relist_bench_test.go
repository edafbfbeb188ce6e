package pleg

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// listRuntime serves fixed lists, switched between variants, and answers
// status calls from them, after an optional latency. It stands for an
// in-process runtime at its cheapest, so that the benchmark measures the PLEG.
type listRuntime struct {
	variants []listVariant
	current  atomic.Int32
	latency  time.Duration
}

type listVariant struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	sbStatus   map[string]*runtimeapi.PodSandboxStatusResponse
	cStatus    map[string]*runtimeapi.ContainerStatusResponse
}

func newListVariant(pods, changed int) listVariant {
	sbs, cs := benchLists(pods, changed)
	return listVariantOf(sbs, cs)
}

// newExtraVariant is newListVariant(pods, 0) with a third running container
// in every pod, listed after the others (as a runtime lists the newest).
func newExtraVariant(pods int) listVariant {
	sbs, cs := benchLists(pods, 0)
	for i, sb := range sbs {
		c := cs[2*i]
		cs = append(cs, &runtimeapi.Container{
			Id:           sb.Id + "-extra",
			PodSandboxId: sb.Id,
			Metadata:     &runtimeapi.ContainerMetadata{Name: "extra"},
			State:        runtimeapi.ContainerState_CONTAINER_RUNNING,
			Labels:       cri.ContainerLabels(types.UID(sb.Metadata.Uid), sb.Metadata.Name, sb.Metadata.Namespace, "extra"),
			CreatedAt:    c.CreatedAt + 1,
		})
	}
	return listVariantOf(sbs, cs)
}

func listVariantOf(sbs []*runtimeapi.PodSandbox, cs []*runtimeapi.Container) listVariant {
	v := listVariant{sandboxes: sbs, containers: cs, sbStatus: map[string]*runtimeapi.PodSandboxStatusResponse{}, cStatus: map[string]*runtimeapi.ContainerStatusResponse{}}
	for _, sb := range v.sandboxes {
		v.sbStatus[sb.Id] = &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
			Id: sb.Id, Metadata: sb.Metadata, State: sb.State, Labels: sb.Labels,
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.2.3"},
		}}
	}
	for _, c := range v.containers {
		v.cStatus[c.Id] = &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
			Id: c.Id, Metadata: c.Metadata, State: c.State, Labels: c.Labels,
		}}
	}
	return v
}

func (r *listRuntime) v() *listVariant { return &r.variants[r.current.Load()] }

func (r *listRuntime) wait(ctx context.Context) error {
	if r.latency == 0 {
		return nil
	}
	t := time.NewTimer(r.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *listRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.v().sandboxes, nil
}

func (r *listRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.v().containers, nil
}

func (r *listRuntime) PodSandboxStatus(ctx context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	if s, ok := r.v().sbStatus[id]; ok {
		return s, nil
	}
	return nil, cri.ErrNotFound
}

func (r *listRuntime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	if s, ok := r.v().cStatus[id]; ok {
		return s, nil
	}
	return nil, cri.ErrNotFound
}

// taken takes every queued event, as a consumer that keeps up would, and
// returns how many there were.
func taken(g *Generic) int {
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	n := 0
	for ; ; n++ {
		if _, ok := g.out.q.peek(); !ok {
			return n
		}
		g.out.q.pop()
	}
}

// BenchmarkRelistStub measures whole relists (list, diff, inspect, cache,
// queue) against listRuntime, for pods with a sandbox and two containers:
// nothing changed; 1% of the pods changed; every pod changed (a third
// container added, or removed again), its events taken from the queue (not
// timed) or handed to OnEvents (timed); every pod changed with 1ms of
// latency per status call (3 calls per pod), at the default parallelism and,
// for comparison, serially as upstream.
// Consecutive relists alternate between two runtime states, so each relist
// sees the stated change.
func BenchmarkRelistStub(b *testing.B) {
	for _, pods := range benchSizes {
		for _, c := range []struct {
			name        string
			changed     int
			extra       bool // every pod changes by a third container
			onEvents    bool
			latency     time.Duration
			parallelism int
		}{
			{name: "unchanged"},
			{name: "changed=1%", changed: pods / 100},
			{name: "changed=100%", extra: true},
			{name: "changed=100%,onevents", extra: true, onEvents: true},
			{name: "changed=100%,latency=1ms", changed: pods, latency: time.Millisecond},
			{name: "changed=100%,latency=1ms,parallelism=1", changed: pods, latency: time.Millisecond, parallelism: 1}, // upstream's serial inspection
		} {
			if c.parallelism == 1 && pods > 1000 {
				continue // 30s a relist
			}
			b.Run(fmt.Sprintf("pods=%d/%s", pods, c.name), func(b *testing.B) {
				second := newListVariant(pods, c.changed)
				if c.extra {
					second = newExtraVariant(pods)
				}
				rt := &listRuntime{variants: []listVariant{newListVariant(pods, 0), second}}
				var handed atomic.Int64
				opts := GenericOptions{Runtime: rt, Clock: clock.RealClock{}, Parallelism: c.parallelism}
				if c.onEvents {
					opts.OnEvents = func(evs []Event) { handed.Add(int64(len(evs))) }
				}
				g, err := NewGeneric(opts)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if err := g.Relist(ctx); err != nil { // deliver the first state
					b.Fatal(err)
				}
				taken(g)
				handed.Store(0)
				rt.latency = c.latency
				b.ReportAllocs()
				i, want, got := 0, 0, 0
				for b.Loop() {
					i++
					rt.current.Store(int32(i % 2))
					if err := g.Relist(ctx); err != nil {
						b.Fatal(err)
					}
					if c.extra {
						b.StopTimer()
						want += pods * (2 - i%2) // started, or died and removed
						got += taken(g) + int(handed.Swap(0))
						b.StartTimer()
					}
				}
				if got != want {
					b.Fatalf("%d events delivered, want %d", got, want)
				}
			})
		}
	}
}

// TestRelistAllocations: a relist in which every pod changed allocates, per
// pod, only the status the cache stores (the PodStatus, its sandbox and
// container slices and its IPs), whether its events are queued or handed
// to OnEvents; everything else is reused from relist to relist.
func TestRelistAllocations(t *testing.T) {
	const pods, perPod, perRelist = 100, 4, 64
	for _, onEvents := range []bool{false, true} {
		t.Run(fmt.Sprint("onEvents=", onEvents), func(t *testing.T) {
			rt := &listRuntime{variants: []listVariant{newListVariant(pods, 0), newExtraVariant(pods)}}
			var handed atomic.Int64
			opts := GenericOptions{Runtime: rt, Clock: clock.RealClock{}}
			if onEvents {
				opts.OnEvents = func(evs []Event) { handed.Add(int64(len(evs))) }
			}
			g, err := NewGeneric(opts)
			require.NoError(t, err)
			i, want, got := 0, 0, 0
			relist := func() {
				i++
				rt.current.Store(int32(i % 2))
				require.NoError(t, g.Relist(t.Context()))
			}
			relist()
			taken(g)
			handed.Store(0)
			allocs := testing.AllocsPerRun(20, func() {
				relist()
				want += pods * (2 - i%2)
				got += taken(g) + int(handed.Swap(0))
			})
			assert.LessOrEqual(t, allocs, float64(perPod*pods+perRelist))
			assert.Equal(t, want, got, "every event delivered")
		})
	}
}
