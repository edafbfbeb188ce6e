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
