package pleg

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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
	v := listVariant{sbStatus: map[string]*runtimeapi.PodSandboxStatusResponse{}, cStatus: map[string]*runtimeapi.ContainerStatusResponse{}}
	v.sandboxes, v.containers = benchLists(pods, changed)
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

// BenchmarkRelistStub measures whole relists (list, diff, inspect, cache,
// queue) against listRuntime, for pods with a sandbox and two containers:
// nothing changed; 1% of the pods changed; every pod changed with 1ms of
// latency per status call (3 calls per pod), at the default parallelism and,
// for comparison, serially as upstream.
// Consecutive relists alternate between two runtime states, so each relist
// sees the stated change.
func BenchmarkRelistStub(b *testing.B) {
	for _, pods := range benchSizes {
		for _, c := range []struct {
			name        string
			changed     int
			latency     time.Duration
			parallelism int
		}{
			{"unchanged", 0, 0, 0},
			{"changed=1%", pods / 100, 0, 0},
			{"changed=100%,latency=1ms", pods, time.Millisecond, 0},
			{"changed=100%,latency=1ms,parallelism=1", pods, time.Millisecond, 1}, // upstream's serial inspection
		} {
			if c.parallelism == 1 && pods > 1000 {
				continue // 30s a relist
			}
			b.Run(fmt.Sprintf("pods=%d/%s", pods, c.name), func(b *testing.B) {
				rt := &listRuntime{variants: []listVariant{newListVariant(pods, 0), newListVariant(pods, c.changed)}}
				g, err := NewGeneric(GenericOptions{Runtime: rt, Clock: clock.RealClock{}, Parallelism: c.parallelism})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if err := g.Relist(ctx); err != nil { // deliver the first state
					b.Fatal(err)
				}
				rt.latency = c.latency
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					rt.current.Store(int32(i % 2))
					if err := g.Relist(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
