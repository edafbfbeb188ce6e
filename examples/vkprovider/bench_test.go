package vkprovider

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/agent"
)

// benchProvider is a Provider holding n pods, not running: what VK's
// calls and the status sink touch, without the agent.
func benchProvider(b *testing.B, n int) (*Provider, []*v1.Pod) {
	b.Helper()
	p, err := New(Options{Agent: agent.Options{NodeName: "vk-node", RootDir: b.TempDir(), Security: agent.SecurityOptions{NoMounts: true}}})
	if err != nil {
		b.Fatal(err)
	}
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       v1.PodSpec{NodeName: "vk-node", Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		}
		if err := p.CreatePod(context.Background(), pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	return p, pods
}

// BenchmarkStatusToVK is the way of every status the agent writes: the
// status sink stores it and queues it, and the notifier's workers hand the
// latest to VK's callback; per status written, with the callback counting.
func BenchmarkStatusToVK(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			p, pods := benchProvider(b, n)
			var delivered atomic.Int64
			ctx, cancel := context.WithCancel(context.Background())
			p.NotifyPods(ctx, func(*v1.Pod) { delivered.Add(1) })
			done := make(chan error, 1)
			go func() { done <- p.runNotifier(ctx) }()
			sink := statusSink{p}
			st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := sink.UpdatePodStatus(ctx, pods[i%n], st); err != nil {
					b.Fatal(err)
				}
				i++
			}
			cancel()
			<-done
			b.ReportMetric(float64(delivered.Load())/float64(i), "delivered/op")
		})
	}
}

// BenchmarkGetPod is VK's pod controller asking for a pod, as it does at
// every sync of one.
func BenchmarkGetPod(b *testing.B) {
	p, pods := benchProvider(b, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := p.GetPod(context.Background(), "default", pods[i%len(pods)].Name); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGetPods is VK listing the provider's pods (its dangling-pod
// sweep), 1000 pods.
func BenchmarkGetPods(b *testing.B) {
	p, _ := benchProvider(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.GetPods(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
