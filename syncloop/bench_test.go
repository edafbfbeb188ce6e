package syncloop_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

var sizes = []int{100, 1000, 10000}

func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = podWith(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i), nil)
	}
	return pods
}

// BenchmarkPodSet measures the desired pod set's calls the agent makes on
// every event (GetPodByUID) and on every housekeeping (GetPods).
func BenchmarkPodSet(b *testing.B) {
	for _, n := range sizes {
		pods := benchPods(n)
		s := syncloop.NewPodSet()
		s.Set(pods)
		b.Run(fmt.Sprintf("GetPodByUID/pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.GetPodByUID(pods[i%n].UID)
				i++
			}
		})
		b.Run(fmt.Sprintf("GetPods/pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.GetPods()
			}
		})
		b.Run(fmt.Sprintf("Set/pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Set(pods)
			}
		})
	}
}

// countingHandler counts syncs and signals after every n-th.
type countingHandler struct {
	n, count int
	batch    chan struct{}
}

func (h *countingHandler) HandlePodAdditions([]*v1.Pod) {}
func (h *countingHandler) HandlePodUpdates([]*v1.Pod)   {}
func (h *countingHandler) HandlePodRemoves([]*v1.Pod)   {}
func (h *countingHandler) HandlePodReconcile([]*v1.Pod) {}
func (h *countingHandler) HandlePodSyncs([]*v1.Pod) {
	h.count++
	if h.count%h.n == 0 {
		h.batch <- struct{}{}
	}
}
func (h *countingHandler) HandlePodCleanups(context.Context) error { return nil }

// BenchmarkPLEGEventDispatch measures the loop's cost per runtime event: a
// channel receive, a pod lookup and the handler call, with as many pods
// desired as the size says.
func BenchmarkPLEGEventDispatch(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pods := benchPods(n)
			s := syncloop.NewPodSet()
			s.Set(pods)
			events := make(chan pleg.Event, 1024)
			const batch = 1000
			h := &countingHandler{n: batch, batch: make(chan struct{})}
			loop, err := syncloop.New(syncloop.Options{Handler: h, Updates: make(chan syncloop.PodUpdate), Pods: s, PLEGEvents: events})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- loop.Run(ctx) }()
			uids := make([]types.UID, n)
			for i, p := range pods {
				uids[i] = p.UID
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				for range batch {
					events <- pleg.Event{PodUID: uids[i%n], Type: pleg.ContainerStarted, ContainerID: "c"}
					i++
				}
				<-h.batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/event")
			cancel()
			<-done
		})
	}
}
