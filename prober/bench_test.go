package prober

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

type benchStatuses map[types.UID]v1.PodStatus

func (s benchStatuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	st, ok := s[uid]
	return st, ok
}

// benchManager registers n pods with one liveness probe each (period 10s)
// and a no-op runner; the Update channels are drained in the background.
func benchManager(b *testing.B, n int) (*Manager, *clocktesting.FakeClock, []*v1.Pod, func()) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	sts := benchStatuses{}
	pods := make([]*v1.Pod, n)
	for i := range n {
		uid := types.UID("uid-" + strconv.Itoa(i))
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i), UID: uid}, Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}}}}
		sts[uid] = v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://c" + strconv.Itoa(i),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := New(Options{
		Runner: ProbeRunnerFunc(func(context.Context, Target) (Outcome, error) { return Outcome{Result: Success}, nil }),
		Status: sts, Clock: clk, Jitter: func(p time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(p))) },
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range []*ResultsManager{m.liveness, m.readiness, m.startup} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-r.Updates():
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return m, clk, pods, func() { cancel(); wg.Wait() }
}

// BenchmarkScheduleMinute drives the scheduler core (heap pop, plan, no-op
// probe, record, reschedule) over one simulated minute in 1s ticks, inline
// without the pool, and reports the cost per probe run.
func BenchmarkScheduleMinute(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			m, clk, pods, stop := benchManager(b, n)
			defer stop()
			for _, p := range pods {
				m.AddPod(p)
			}
			ctx := context.Background()
			runs := 0
			b.ReportAllocs()
			for b.Loop() {
				for range 60 {
					clk.Step(time.Second)
					due, _, _ := m.popDue(clk.Now())
					for _, w := range due {
						m.runOne(ctx, w)
					}
					runs += len(due)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/probe-run")
			b.ReportMetric(float64(runs)/float64(b.N), "runs/minute")
		})
	}
}

// BenchmarkRegister measures the heap bytes retained per registered probe.
func BenchmarkRegister(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			var perProbe float64
			b.ReportAllocs()
			for b.Loop() {
				m, _, pods, stop := benchManager(b, n)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for _, p := range pods {
					m.AddPod(p)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perProbe = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				runtime.KeepAlive(m)
				stop()
			}
			b.ReportMetric(perProbe, "B/probe")
		})
	}
}

// BenchmarkRunMinute is BenchmarkScheduleMinute through Run: the driver
// goroutine, the timer on the fake clock and the pool hand-off. Jitters are
// 1s..10s in turn so that each stepped second makes exactly n/10 probes due;
// after each step the benchmark waits for their AfterProbe calls. It reports
// wall and process CPU time (all goroutines, the benchmark's own included)
// per probe run.
func BenchmarkRunMinute(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			m, clk, pods, stop := benchManager(b, n)
			defer stop()
			next := 0
			m.opts.Jitter = func(time.Duration) time.Duration { next = next%10 + 1; return time.Duration(next) * time.Second }
			ran := make(chan struct{}, n)
			m.opts.AfterProbe = func(types.UID, string, ProbeType, Result) { ran <- struct{}{} }
			for _, p := range pods {
				m.AddPod(p)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- m.Run(ctx) }()
			defer func() { cancel(); <-done }()
			runs := 0
			cpu0 := cpuTime()
			b.ReportAllocs()
			for b.Loop() {
				for range 60 {
					for !clk.HasWaiters() {
						runtime.Gosched()
					}
					clk.Step(time.Second)
					for range n / 10 {
						<-ran
					}
					runs += n / 10
				}
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/probe-run")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(runs), "cpu-ns/probe-run")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
