package eviction_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// benchNode builds n pods with mixed priorities, requests and usage, and
// their stats.
func benchNode(n int) ([]*v1.Pod, *stats.Summary) {
	pods := make([]*v1.Pod, n)
	s := &stats.Summary{Pods: make([]stats.PodStats, n)}
	for i := range pods {
		prio := int32(i % 7 * 100)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceMemory: *resource.NewQuantity(int64(i%5)*64<<20, resource.BinarySI), v1.ResourceEphemeralStorage: *resource.NewQuantity(int64(i%3)<<30, resource.BinarySI),
			}}}}},
		}
		pods[i] = p
		procs := uint64(i%50 + 1)
		used := uint64((i*7919)%1024) << 20
		s.Pods[i] = stats.PodStats{UID: p.UID, Memory: &stats.MemoryStats{WorkingSetBytes: used}, ProcessCount: &procs, Containers: []stats.ContainerStats{{
			Name: "app", Memory: &stats.MemoryStats{WorkingSetBytes: used}, Rootfs: &stats.FsStats{UsedBytes: used * 2, InodesUsed: used >> 20}, Logs: &stats.FsStats{UsedBytes: used / 4},
		}}}
	}
	return pods, s
}

var benchSizes = []int{110, 1000, 10000}

func BenchmarkRank(b *testing.B) {
	for _, n := range benchSizes {
		pods, s := benchNode(n)
		fn := eviction.PodStatsFunc(s)
		work := make([]*v1.Pod, n)
		for _, c := range []struct {
			name string
			rank eviction.RankFunc
		}{
			{"memory", eviction.RankMemoryPressure},
			{"disk", eviction.RankFor(eviction.SignalNodeFsAvailable, false, false)},
			{"pid", eviction.RankPIDPressure},
		} {
			b.Run(fmt.Sprintf("%s/pods=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(work, pods)
					c.rank(work, fn)
				}
			})
		}
	}
}

// BenchmarkSynchronize is one full pass under hard memory pressure with fake
// stats: observe, thresholds, conditions, local storage checks, ranking, and
// one eviction to a killer that returns at once. "fake" gets its summary from
// evictiontest.Stats, which deep-copies it on every Get (as a real provider
// builds a new one); "shared" from a ProviderFunc returning one prebuilt
// summary, which measures the manager alone.
func BenchmarkSynchronize(b *testing.B) {
	for _, n := range benchSizes {
		pods, s := benchNode(n)
		s.Node = stats.NodeStats{
			Memory: &stats.MemoryStats{AvailableBytes: 50 << 20, WorkingSetBytes: 60 << 30},
			Fs:     &stats.FsStats{AvailableBytes: 500 << 30, CapacityBytes: 1 << 40, InodesFree: 1 << 24, Inodes: 1 << 25},
			Rlimit: &stats.RlimitStats{MaxPID: 1 << 22, NumOfRunningProcesses: 5000},
		}
		fake := &evictiontest.Stats{}
		fake.Set(*s)
		for _, p := range []struct {
			name string
			prov stats.Provider
		}{
			{"fake", fake},
			{"shared", stats.ProviderFunc(func(context.Context) (*stats.Summary, error) { return s, nil })},
		} {
			b.Run(fmt.Sprintf("stats=%s/pods=%d", p.name, n), func(b *testing.B) {
				m, err := eviction.New(eviction.Options{
					Thresholds: eviction.DefaultHardThresholds(), Stats: p.prov, Pods: func() []*v1.Pod { return pods },
					Killer: eviction.PodKillerFunc(func(context.Context, *v1.Pod, v1.PodStatus, *int64) error { return nil }),
					Clock:  clocktesting.NewFakeClock(t0),
				})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if ev, err := m.Synchronize(ctx); err != nil || len(ev) != 1 {
						b.Fatalf("evicted %d, err %v", len(ev), err)
					}
				}
			})
		}
	}
}
