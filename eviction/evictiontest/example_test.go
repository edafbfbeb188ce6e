package evictiontest_test

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

// The fakes drive an eviction manager under disk pressure: the node
// filesystem is below its threshold, the fake image garbage collector frees
// space by updating the fake stats from its OnImages hook, so the manager
// reclaims the disk without killing the pod. The DiskPressure condition
// stays true for the pressure transition period after the threshold was
// last met.
func Example() {
	thresholds, err := eviction.ParseThresholds("nodefs.available<1Gi", "", "", "")
	if err != nil {
		panic(err)
	}
	fakeStats := &evictiontest.Stats{}
	fakeStats.Set(stats.Summary{
		Node: stats.NodeStats{Fs: &stats.FsStats{CapacityBytes: 10 << 30, AvailableBytes: 512 << 20}},
		Pods: []stats.PodStats{{UID: "uid-web", Name: "web", Namespace: "default"}},
	})
	gc := &evictiontest.GC{
		OnImages: func(context.Context) error {
			fakeStats.Update(func(s *stats.Summary) { s.Node.Fs.AvailableBytes += 4 << 30 })
			return nil
		},
	}
	killer := &evictiontest.Killer{}
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}}
	m, err := eviction.New(eviction.Options{
		Thresholds:  thresholds,
		Stats:       fakeStats,
		Pods:        func() []*v1.Pod { return []*v1.Pod{web} },
		Killer:      killer,
		ImageGC:     gc,
		ContainerGC: gc,
		Clock:       clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		panic(err)
	}
	evicted, err := m.Synchronize(context.Background())
	if err != nil {
		panic(err)
	}
	s, err := fakeStats.Get(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("evicted:", len(evicted), "kills:", len(killer.Kills()))
	fmt.Println("garbage collection:", gc.Calls())
	fmt.Println("nodefs available (MiB):", s.Node.Fs.AvailableBytes>>20)
	fmt.Println("disk pressure:", m.IsUnderDiskPressure())
	fmt.Println("stats calls:", fakeStats.Calls())
	// Output:
	// evicted: 0 kills: 0
	// garbage collection: [containers images]
	// nodefs available (MiB): 4608
	// disk pressure: true
	// stats calls: 3
}
