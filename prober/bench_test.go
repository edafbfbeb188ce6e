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
	"k8s.io/apimachinery/pkg/api/resource"
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
			runs := scheduleMinutes(b, m, clk, pods)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/probe-run")
			b.ReportMetric(float64(runs)/float64(b.N), "runs/minute")
		})
	}
}

// scheduleMinutes adds the pods, then for each b.Loop steps the clock 60
// times by 1s and runs the due workers' turns inline; it returns the turns
// run.
func scheduleMinutes(b *testing.B, m *Manager, clk *clocktesting.FakeClock, pods []*v1.Pod) int {
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
	return runs
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

// copiedStatuses hands out a deep copy of a pod's status, as the status
// Manager's GetPodStatus does; lentStatuses lends it (StatusViewer).
type copiedStatuses map[types.UID]*v1.PodStatus

func (s copiedStatuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	st, ok := s[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *st.DeepCopy(), true
}

type lentStatuses struct{ copiedStatuses }

func (s lentStatuses) ViewPodStatus(uid types.UID, f func(*v1.PodStatus)) bool {
	st, ok := s.copiedStatuses[uid]
	if ok {
		f(st)
	}
	return ok
}

// fullStatus is what a running pod's status holds besides the probed
// container: the conditions, IPs, a second container, resources.
func fullStatus(st v1.PodStatus, start time.Time) *v1.PodStatus {
	at := metav1.NewTime(start)
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: at})
	}
	st.Phase, st.HostIP, st.PodIP, st.StartTime, st.QOSClass = v1.PodRunning, "10.0.0.1", "10.1.0.5", &at, v1.PodQOSBurstable
	st.HostIPs, st.PodIPs = []v1.HostIP{{IP: "10.0.0.1"}}, []v1.PodIP{{IP: "10.1.0.5"}}
	yes := true
	side := st.ContainerStatuses[0]
	side.Name, side.ContainerID = "side", side.ContainerID+"-side"
	st.ContainerStatuses = append(st.ContainerStatuses, side)
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started, cs.Image, cs.ImageID = true, &yes, "busybox:1.36", "sha256:0123456789abcdef"
		cs.AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}
		cs.Resources = &v1.ResourceRequirements{Requests: cs.AllocatedResources.DeepCopy()}
	}
	return &st
}

// BenchmarkTurnStatusRead is BenchmarkScheduleMinute's turns with pod
// statuses as full as a running pod's, read from a provider that copies
// them (as GetPodStatus) or lends them (StatusViewer, what the status
// Manager does for the prober).
func BenchmarkTurnStatusRead(b *testing.B) {
	for _, mode := range []string{"copied", "lent"} {
		b.Run("status="+mode, func(b *testing.B) {
			const n = 1000
			m, clk, pods, stop := benchManager(b, n)
			defer stop()
			copied := copiedStatuses{}
			for uid, st := range m.opts.Status.(benchStatuses) {
				copied[uid] = fullStatus(st, clk.Now())
			}
			m.opts.Status = copied
			if mode == "lent" {
				m.opts.Status = lentStatuses{copied}
			}
			runs := scheduleMinutes(b, m, clk, pods)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/probe-run")
		})
	}
}
