package podsync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func BenchmarkComputeActions(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			pod, st := steadyPod(n)
			b.ReportAllocs()
			for b.Loop() {
				if a := podsync.ComputeActions(pod, st, podsync.Probes{}); !a.Nothing() {
					b.Fatal("not steady")
				}
			}
		})
	}
}

// BenchmarkSyncPodSteady syncs a running pod against the in-process fake:
// "status" includes cri.GetPodStatus (list and inspect), "sync" is SyncPod
// alone with the status already taken.
func BenchmarkSyncPodSteady(b *testing.B) {
	for _, n := range []int{1, 10} {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}, CallHistory: -1})
		s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Config: containerconfig.Options{LogRoot: b.TempDir()}})
		if err != nil {
			b.Fatal(err)
		}
		var apps []v1.Container
		for i := range n {
			apps = append(apps, ctr(fmt.Sprintf("c%d", i)))
		}
		pod := newPod("", nil, apps...)
		ctx := context.Background()
		if err := s.SyncPod(ctx, pod, nil).Err(); err != nil {
			b.Fatal(err)
		}
		st, err := cri.GetPodStatus(ctx, rt, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("sync/containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := s.SyncPod(ctx, pod, st); len(r.Steps) != 0 {
					b.Fatal("not steady")
				}
			}
		})
		b.Run(fmt.Sprintf("status+sync/containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := cri.GetPodStatus(ctx, rt, pod.UID, pod.Name, pod.Namespace)
				if err != nil {
					b.Fatal(err)
				}
				if r := s.SyncPod(ctx, pod, st); len(r.Steps) != 0 {
					b.Fatal("not steady")
				}
			}
		})
		rt.Close()
	}
}
