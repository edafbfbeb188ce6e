package stats_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// A ProviderFunc serves a fixed summary, as a test or a custom node agent
// would; the caller derives the node's memory capacity, its free PIDs and
// each pod's local storage usage from it.
func ExampleProviderFunc() {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	used := func(b uint64) *stats.FsStats { return &stats.FsStats{Time: at, UsedBytes: b} }
	var p stats.Provider = stats.ProviderFunc(func(context.Context) (*stats.Summary, error) {
		return &stats.Summary{
			Node: stats.NodeStats{
				Memory: &stats.MemoryStats{Time: at, AvailableBytes: 3 << 30, WorkingSetBytes: 5 << 30},
				Fs:     &stats.FsStats{Time: at, CapacityBytes: 100 << 30, AvailableBytes: 40 << 30, Inodes: 1000, InodesFree: 600},
				Rlimit: &stats.RlimitStats{Time: at, MaxPID: 4096, NumOfRunningProcesses: 1200},
			},
			Pods: []stats.PodStats{{
				UID: "uid-web", Name: "web", Namespace: "default",
				Containers: []stats.ContainerStats{{Name: "app", Rootfs: used(30 << 20), Logs: used(2 << 20)}},
				Volumes:    []stats.VolumeStats{{Name: "cache", FsStats: stats.FsStats{UsedBytes: 100 << 20}}},
			}},
		}, nil
	})

	s, err := p.Get(context.Background())
	if err != nil {
		panic(err)
	}
	n := s.Node
	fmt.Printf("memory: available %dGi of %dGi\n", n.Memory.AvailableBytes>>30, (n.Memory.AvailableBytes+n.Memory.WorkingSetBytes)>>30)
	fmt.Printf("nodefs: available %dGi of %dGi, inodes free %d of %d\n", n.Fs.AvailableBytes>>30, n.Fs.CapacityBytes>>30, n.Fs.InodesFree, n.Fs.Inodes)
	fmt.Printf("pid: available %d of %d\n", n.Rlimit.MaxPID-n.Rlimit.NumOfRunningProcesses, n.Rlimit.MaxPID)
	fmt.Println("imagefs measured:", n.ImageFs != nil, "dedicated:", n.DedicatedImageFs)
	for _, pod := range s.Pods {
		var total uint64
		for _, c := range pod.Containers {
			if c.Rootfs != nil {
				total += c.Rootfs.UsedBytes
			}
			if c.Logs != nil {
				total += c.Logs.UsedBytes
			}
		}
		for _, v := range pod.Volumes {
			total += v.UsedBytes
		}
		fmt.Printf("pod %s/%s: local storage %dMi\n", pod.Namespace, pod.Name, total>>20)
	}
	// Output:
	// memory: available 3Gi of 8Gi
	// nodefs: available 40Gi of 100Gi, inodes free 600 of 1000
	// pid: available 2896 of 4096
	// imagefs measured: false dedicated: false
	// pod default/web: local storage 132Mi
}
