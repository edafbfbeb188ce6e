package podworkers

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func noWait(context.Context, types.UID, time.Time) error { return nil }

// runBench starts Workers with syncer on a fake clock (no resync fires) and
// stops them when the benchmark ends.
func runBench(b *testing.B, syncer Syncer) *Workers {
	b.Helper()
	w, err := New(Options{Syncer: syncer, StatusWaiter: StatusWaiterFunc(noWait), Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return w
}

func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = testPod(fmt.Sprintf("pod-%d", i))
	}
	return pods
}

// BenchmarkUpdatePod measures UpdatePod while the pod's SyncPod is in flight:
// every update only replaces the pending one (the coalescing path).
func BenchmarkUpdatePod(b *testing.B) {
	b.Run("coalescing", func(b *testing.B) {
		started := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		w := runBench(b, SyncerFuncs{SyncPodFunc: func(ctx context.Context, _ UpdateType, _, _ *v1.Pod) (bool, error) {
			first := false
			once.Do(func() { first = true })
			if first {
				close(started)
				<-release
			}
			return false, nil
		}})
		pod := testPod("busy")
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod})
		<-started
		opts := UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod}
		b.ReportAllocs()
		for b.Loop() {
			w.UpdatePod(opts)
		}
		b.StopTimer()
		close(release)
	})
}

// BenchmarkUpdatePodFanOut sends one update to each of n idle pods and waits
// until each has been synced by a no-op Syncer: a worker goroutine is started
// and ends for every pod.
func BenchmarkUpdatePodFanOut(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var synced sync.WaitGroup
			w := runBench(b, SyncerFuncs{SyncPodFunc: func(context.Context, UpdateType, *v1.Pod, *v1.Pod) (bool, error) {
				synced.Done()
				return false, nil
			}})
			pods := benchPods(n)
			synced.Add(n)
			for _, p := range pods {
				w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: p})
			}
			synced.Wait()
			if err := w.WaitIdle(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				synced.Add(n)
				for _, p := range pods {
					w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: p})
				}
				synced.Wait()
			}
			b.StopTimer()
			if err := w.WaitIdle(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
		})
	}
}

// BenchmarkIdlePodMemory measures the heap the workers hold per synced, idle
// pod (pod objects excluded: they belong to the caller) and reports it as
// bytes/pod. Each iteration builds fresh workers with n pods.
func BenchmarkIdlePodMemory(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pods := benchPods(n)
			var perPod float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				w, err := New(Options{Syncer: SyncerFuncs{}, StatusWaiter: StatusWaiterFunc(noWait),
					Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx) }()
				for _, p := range pods {
					w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: p})
				}
				if err := w.WaitIdle(context.Background()); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				if w.m.Len() != n {
					b.Fatalf("%d pods known", w.m.Len())
				}
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(perPod, "bytes/pod")
		})
	}
}
