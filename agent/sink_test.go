package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// recipient is a status sink that knows no pod: GetPod never finds one, and
// every status it is given is kept by pod name.
type recipient struct {
	mu       sync.Mutex
	statuses map[string]v1.PodStatus
}

func (r *recipient) GetPod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	return nil, fmt.Errorf("pod %s: %w", pod.Name, status.ErrPodNotFound)
}

func (r *recipient) UpdatePodStatus(_ context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses[pod.Namespace+"/"+pod.Name] = st
	return nil, nil
}

func (r *recipient) DeletePod(context.Context, *v1.Pod) error { return nil }

func (r *recipient) phase(key string) v1.PodPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses[key].Phase
}

// A status sink that has never seen a pod receives the statuses of the pods
// of a custom source: without mirror pods, the agent hands it its own copy
// of each pod.
func TestFreshSinkReceivesStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &recipient{statuses: map[string]v1.PodStatus{}}
		updates := make(chan syncloop.PodUpdate)
		a, err := agent.New(agent.Options{
			RootDir: t.TempDir(), NodeName: "node1",
			Node: agent.NodeOptions{HostIPs: []string{"192.0.2.10"}, ResolvConf: agent.ResolvConfNone,
				Machine: nodetest.Machine{Cap: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}},
			Eviction: agent.EvictionOptions{Stats: &evictiontest.Stats{}},
			Security: agent.SecurityOptions{NoMounts: true},
			Cluster:  agent.ClusterOptions{StatusSink: sink},
			Sources:  agent.SourceOptions{Custom: []agent.PodSource{{Name: "edge", Updates: updates}}},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		<-a.Ready()

		updates <- set(edgePod("web"))
		// Time moves only when every goroutine of the bubble waits: each
		// second is a relist of the fake runtime on the bubble's clock.
		for i := 0; i < 30 && sink.phase("default/web") != v1.PodRunning; i++ {
			time.Sleep(time.Second)
		}
		assert.Equal(t, v1.PodRunning, sink.phase("default/web"))
		sink.mu.Lock()
		defer sink.mu.Unlock()
		require.Len(t, sink.statuses["default/web"].ContainerStatuses, 1)
		assert.True(t, sink.statuses["default/web"].ContainerStatuses[0].Ready)
	})
}
