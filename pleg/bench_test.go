package pleg_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/pleg"
)

// benchNode is a fake runtime (real clock, no call recording) holding pods
// with a sandbox and two running containers each.
type benchNode struct {
	rt        *fake.Runtime
	uids      []types.UID
	sandboxes []string
	extra     []string // the third container of each pod, while it exists
}

func newBenchNode(b *testing.B, pods int) *benchNode {
	b.Helper()
	n := &benchNode{rt: fake.New(fake.Options{Images: []string{"busybox"}, CallHistory: -1}), extra: make([]string, pods)}
	b.Cleanup(n.rt.Close)
	for i := range pods {
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		sb, err := n.rt.RunPodSandbox(context.Background(), sandboxConfig(uid), "")
		if err != nil {
			b.Fatal(err)
		}
		n.uids, n.sandboxes = append(n.uids, uid), append(n.sandboxes, sb)
		for _, c := range []string{"app", "sidecar"} {
			n.start(b, i, c)
		}
	}
	return n
}

func (n *benchNode) start(b *testing.B, i int, name string) string {
	ctx := context.Background()
	cfg := sandboxConfig(n.uids[i])
	id, err := n.rt.CreateContainer(ctx, n.sandboxes[i], &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:   cri.ContainerLabels(n.uids[i], cfg.Metadata.Name, "default", name),
	}, cfg)
	if err == nil {
		err = n.rt.StartContainer(ctx, id)
	}
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// toggle changes the first k pods: each gets a third container, or loses
// the one it got last time. It returns how many events the next relist
// delivers: ContainerStarted for an added container, ContainerDied and
// ContainerRemoved for a removed one.
func (n *benchNode) toggle(b *testing.B, k int) int {
	events := 0
	for i := range k {
		if n.extra[i] == "" {
			n.extra[i] = n.start(b, i, "extra")
			events++
			continue
		}
		if err := n.rt.RemoveContainer(context.Background(), n.extra[i]); err != nil {
			b.Fatal(err)
		}
		n.extra[i] = ""
		events += 2
	}
	return events
}

// BenchmarkRelist measures whole relists of the generic PLEG (list, diff,
// inspect, cache, queue) against cri/fake, for pods with a sandbox and two
// containers: (a) nothing changed; (b) 1% of the pods changed (a container
// added or removed); (c) every pod changed, its events handed to OnEvents
// (as package agent takes them) and counted; (d) every pod changed, with 1ms
// of latency on each status call (3 or 4 calls per pod), at the default
// parallelism of 8. Changing the runtime between relists is not timed.
// hack/upstreambench runs upstream's relist on the same node.
func BenchmarkRelist(b *testing.B) {
	for _, pods := range []int{100, 1000, 10000} {
		for _, c := range []struct {
			name     string
			changed  int
			onEvents bool
			latency  time.Duration
		}{
			{"unchanged", 0, false, 0},
			{"changed=1%", pods / 100, false, 0},
			{"changed=100%,onevents", pods, true, 0},
			{"changed=100%,latency=1ms", pods, false, time.Millisecond},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", pods, c.name), func(b *testing.B) {
				n := newBenchNode(b, pods)
				var handed atomic.Int64
				opts := pleg.GenericOptions{Runtime: n.rt}
				if c.onEvents {
					opts.OnEvents = func(evs []pleg.Event) { handed.Add(int64(len(evs))) }
				}
				g, err := pleg.NewGeneric(opts)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if err := g.Relist(ctx); err != nil {
					b.Fatal(err)
				}
				if c.latency > 0 {
					n.rt.InjectFault(fake.PodSandboxStatus, fake.Fault{Latency: c.latency})
					n.rt.InjectFault(fake.ContainerStatus, fake.Fault{Latency: c.latency})
				}
				handed.Store(0)
				b.ReportAllocs()
				want := 0
				for b.Loop() {
					if c.changed > 0 {
						b.StopTimer()
						want += n.toggle(b, c.changed)
						b.StartTimer()
					}
					if err := g.Relist(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if got := int(handed.Load()); c.onEvents && got != want {
					b.Fatalf("%d events handed over, want %d", got, want)
				}
			})
		}
	}
}

// BenchmarkFakeList measures the two list calls alone against cri/fake: the
// floor under BenchmarkRelist's "unchanged" case, so that the PLEG's own
// share can be read off.
func BenchmarkFakeList(b *testing.B) {
	for _, pods := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			n := newBenchNode(b, pods)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := n.rt.ListPodSandbox(ctx, nil); err != nil {
					b.Fatal(err)
				}
				if _, err := n.rt.ListContainers(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
