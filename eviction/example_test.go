package eviction_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// Memory pressure on a node with two pods: the BestEffort pod using the most
// memory is evicted, one pod per pass, and BestEffort pods are no longer
// admitted.
func Example() {
	thresholds, err := eviction.ParseThresholds("memory.available<100Mi", "", "", "")
	if err != nil {
		panic(err)
	}
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	batch := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default", UID: "uid-batch"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job"}}}}
	mem := func(b uint64) *stats.MemoryStats { return &stats.MemoryStats{WorkingSetBytes: b} }

	fakeStats := &evictiontest.Stats{}
	fakeStats.Set(stats.Summary{
		Node: stats.NodeStats{Memory: &stats.MemoryStats{AvailableBytes: 60 << 20, WorkingSetBytes: 4 << 30}},
		Pods: []stats.PodStats{
			{UID: "uid-web", Memory: mem(300 << 20), Containers: []stats.ContainerStats{{Name: "app", Memory: mem(300 << 20)}}},
			{UID: "uid-batch", Memory: mem(2 << 30), Containers: []stats.ContainerStats{{Name: "job", Memory: mem(2 << 30)}}},
		},
	})
	killer := &evictiontest.Killer{}
	m, err := eviction.New(eviction.Options{
		Thresholds: thresholds,
		Stats:      fakeStats,
		Pods:       func() []*v1.Pod { return []*v1.Pod{web, batch} },
		Killer:     killer,
		Clock:      clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		panic(err)
	}
	evicted, err := m.Synchronize(context.Background())
	if err != nil {
		panic(err)
	}
	k := killer.Kills()[0]
	fmt.Println("evicted:", evicted[0].Name, "grace:", *k.GracePeriod)
	fmt.Println(k.Status.Phase, k.Status.Reason)
	fmt.Printf("%q\n", k.Status.Message)
	fmt.Println("memory pressure:", m.IsUnderMemoryPressure())
	_, reason, msg := m.Admit(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}})
	fmt.Printf("admit BestEffort: %s %q\n", reason, msg)
	// Output:
	// evicted: batch grace: 1
	// Failed Evicted
	// "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. Container job was using 2Gi, request is 0, has larger consumption of memory. "
	// memory pressure: true
	// admit BestEffort: Evicted "The node had condition: [MemoryPressure]. "
}

// A caller that drives the decisions itself: it measures, lets the Machine
// decide, and carries the decision out. The node filesystem is nearly full:
// the pass asks for garbage collection first, which frees too little, so
// Reclaimed names the pod to evict.
func ExampleMachine() {
	thresholds, err := eviction.ParseThresholds("nodefs.available<10%", "", "", "")
	if err != nil {
		panic(err)
	}
	m, err := eviction.NewMachine(eviction.MachineOptions{Thresholds: thresholds, ContainerGC: true, ImageGC: true})
	if err != nil {
		panic(err)
	}
	logger := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "logger", Namespace: "default", UID: "uid-logger"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	measure := func(free uint64) *stats.Summary { // what a stats.Provider returns
		return &stats.Summary{
			Node: stats.NodeStats{Fs: &stats.FsStats{AvailableBytes: free, CapacityBytes: 100 << 30}},
			Pods: []stats.PodStats{{UID: "uid-logger", Containers: []stats.ContainerStats{{
				Name: "app", Rootfs: &stats.FsStats{UsedBytes: 1 << 30}, Logs: &stats.FsStats{UsedBytes: 20 << 30},
			}}}},
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	d := m.Decide(eviction.NewInput(now, measure(5<<30), []*v1.Pod{logger}))
	fmt.Println("conditions:", d.Conditions)
	fmt.Println("acting:", d.Acting[0].String(), "on", d.Resource)
	fmt.Println("reclaim: containers", d.Reclaim.Containers, "images", d.Reclaim.Images)
	evictions := d.Evictions
	if d.Reclaim.Any() {
		// Delete dead containers and unused images here, then measure again.
		var relieved bool
		evictions, relieved = m.Reclaimed(eviction.Observe(measure(8 << 30)))
		fmt.Println("relieved:", relieved)
	}
	for _, e := range evictions {
		st := e.Status(now) // kill e.Pod with e.GracePeriodSeconds, ending in st
		fmt.Println("evict:", e.Pod.Name, "grace:", e.GracePeriodSeconds, st.Phase, st.Reason, st.Conditions[0].Type)
		fmt.Printf("%q\n", e.Message)
	}
	admit, reason, _ := eviction.Admit(d.Conditions, &v1.Pod{})
	fmt.Println("admit BestEffort:", admit, reason)
	// Output:
	// conditions: [DiskPressure]
	// acting: nodefs.available<10% on ephemeral-storage
	// reclaim: containers true images true
	// relieved: false
	// evict: logger grace: 1 Failed Evicted DisruptionTarget
	// "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. Container app was using 21Gi, request is 0, has larger consumption of ephemeral-storage. "
	// admit BestEffort: false Evicted
}
