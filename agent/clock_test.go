package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// With Options.Clock, every time the agent writes comes from that clock:
// outside a synctest bubble, on a fake clock years from now, a pod's start
// time, its conditions' transitions and its container's start are that
// clock's, never the machine's.
func TestEveryTimestampComesFromTheClock(t *testing.T) {
	start := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	updates := make(chan syncloop.PodUpdate, 1)
	a, err := agent.New(agent.Options{
		Clock:    clk,
		NodeName: "node1",
		Node:     agent.NodeOptions{HostIPs: []string{"192.0.2.10"}, Machine: nodetest.Machine{Cap: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}}},
		RootDir:  t.TempDir(),
		Security: agent.SecurityOptions{NoMounts: true},
		Eviction: agent.EvictionOptions{Stats: &evictiontest.Stats{}},
		Cluster:  agent.ClusterOptions{Updates: updates},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "web", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}
	validation.DefaultPod(pod)
	updates <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: []*v1.Pod{pod}}

	// Step the fake clock a second at a time until the pod is Ready.
	var got v1.Pod
	require.Eventually(t, func() bool {
		clk.Step(time.Second)
		for _, p := range a.PodStatuses() {
			if p.Name == "web" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
				got = p
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond)

	end := clk.Now()
	within := func(what string, ts time.Time) {
		t.Helper()
		assert.False(t, ts.Before(start) || ts.After(end), "%s %s is not the clock's (%s to %s)", what, ts, start, end)
	}
	require.NotNil(t, got.Status.StartTime)
	within("startTime", got.Status.StartTime.Time)
	for _, c := range got.Status.Conditions {
		within(string(c.Type)+" lastTransitionTime", c.LastTransitionTime.Time)
	}
	require.NotNil(t, got.Status.ContainerStatuses[0].State.Running)
	within("container startedAt", got.Status.ContainerStatuses[0].State.Running.StartedAt.Time)
}
