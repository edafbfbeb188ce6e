package podsync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
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
		s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, LogRoot: b.TempDir()})
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

// BenchmarkServiceEnv is the service part of a container's environment,
// computed at every container start, with services spread over 10
// namespaces (the pod sees a tenth of them, plus the kubernetes service).
func BenchmarkServiceEnv(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			services := make([]*v1.Service, n)
			for i := range services {
				services[i] = &v1.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("svc-%d", i)},
					Spec:       v1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Ports: []v1.ServicePort{{Name: "http", Port: 80}}},
				}
			}
			services[0].Namespace, services[0].Name = "default", "kubernetes"
			b.ReportAllocs()
			for b.Loop() {
				if env := podsync.ServiceEnv(services, "ns-1", true); len(env) == 0 {
					b.Fatal("no variables")
				}
			}
		})
	}
}
