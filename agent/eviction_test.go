package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

const (
	mi = 1 << 20
	gi = 1 << 30
)

// pressureStats is a node of a fixed memory capacity on which each pod
// with a set usage uses that much while it has a running container: when
// the eviction manager kills a pod, its memory comes back. Measurements
// are stamped with the node's time, so that every pass of the manager sees
// a fresh one. Until the node is set, nothing is measured.
type pressureStats struct {
	mu       sync.Mutex
	n        *agenttest.Node
	capacity uint64
	usage    map[types.UID]uint64
}

func (s *pressureStats) set(n *agenttest.Node, capacity uint64, usage map[types.UID]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.capacity, s.usage = n, capacity, usage
}

func (s *pressureStats) Get(context.Context) (*stats.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := &stats.Summary{}
	if s.n == nil {
		return sum, nil
	}
	now := s.n.Now()
	var used uint64
	for _, p := range s.n.Agent().PodStatuses() {
		ws, ok := s.usage[p.UID]
		if !ok || runningContainers(s.n, p.UID) == 0 {
			continue
		}
		used += ws
		sum.Pods = append(sum.Pods, stats.PodStats{UID: p.UID, Name: p.Name, Namespace: p.Namespace,
			Memory:     &stats.MemoryStats{Time: now, WorkingSetBytes: ws},
			Containers: []stats.ContainerStats{{Name: p.Spec.Containers[0].Name, Memory: &stats.MemoryStats{Time: now, WorkingSetBytes: ws}}}})
	}
	sum.Node.Memory = &stats.MemoryStats{Time: now, AvailableBytes: s.capacity - used, WorkingSetBytes: used}
	return sum, nil
}

// apiPod is a pod of an API server, with a memory request if one is given.
func apiPod(name string, memoryRequest string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: name, Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}
	if memoryRequest != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memoryRequest)}
	}
	return p
}

// nodeCondition returns the status of a condition of the node's status as
// last built.
func nodeCondition(n *agenttest.Node, typ v1.NodeConditionType) v1.ConditionStatus {
	st, ok := n.Agent().NodeStatus()
	if !ok {
		return ""
	}
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// Under memory pressure the eviction manager evicts the pod that uses the
// most above its request, never a static pod, with upstream's status and
// events; the node shows the pressure, and a BestEffort pod is refused
// while it lasts.
func TestMemoryPressureEvictsTheRightPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &pressureStats{}
		m := &hookMetrics{recordingMetrics: newRecordingMetrics(), probes: map[probeKey]int{}}
		// A static pod uses 2Gi: static pods are critical, never evicted.
		n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Eviction: agent.EvictionOptions{Stats: st}, Metrics: m}},
			map[string]string{"static.yaml": `
apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  containers:
  - {name: static, image: busybox:1.36, command: [sleep, "3600"]}
`})
		start := n.Now()
		// From the API server: hog has no requests and uses 1Gi, small
		// asks for 100Mi and uses 10Mi.
		hog, small := n.AddPod(apiPod("hog", "")), n.AddPod(apiPod("small", "100Mi"))
		for _, name := range []string{"hog", "small", "static-node1"} {
			require.True(t, n.StepUntil(time.Minute, podIs(n, name, isRunning)), "%s Running", name)
		}
		static := mustPod(t, n, "static-node1")

		// Memory available drops to 50Mi, under the default hard
		// threshold (100Mi), while hog runs.
		st.set(n, gi+10*mi+2*gi+50*mi, map[types.UID]uint64{hog.UID: gi, small.UID: 10 * mi, static.UID: 2 * gi})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "hog", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })), "hog evicted")
		evicted := mustPod(t, n, "hog")
		const message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container hog was using 1Gi, request is 0, has larger consumption of memory. "
		assert.Equal(t, "Evicted", evicted.Status.Reason)
		m.mu.Lock()
		assert.Equal(t, []string{"memory.available"}, m.evictions, "kubelet_evictions")
		m.mu.Unlock()
		assert.Equal(t, message, evicted.Status.Message)
		assert.Equal(t, v1.ConditionTrue, condition(evicted, v1.DisruptionTarget))
		require.Len(t, evicted.Status.ContainerStatuses, 1)
		require.NotNil(t, evicted.Status.ContainerStatuses[0].State.Terminated, "container terminated")
		assert.Zero(t, runningContainers(n, hog.UID))
		// At the manager's first pass (every 10s from the start) that
		// measures the pressure.
		hogEvents := eventsAbout(n, start, "Pod default/hog")
		require.GreaterOrEqual(t, len(hogEvents), 2)
		assert.Equal(t, []string{"10s Warning Evicted: " + message, "10s Normal Killing: Stopping container hog"}, hogEvents[len(hogEvents)-2:])
		assert.Equal(t, []string{"10s Warning EvictionThresholdMet: Attempting to reclaim memory"}, eventsAbout(n, start, "Node node1"))

		// hog's memory came back: no other pod is evicted, and the node
		// shows the pressure for the transition period (5m).
		require.True(t, n.StepUntil(time.Minute, func() bool { return nodeCondition(n, v1.NodeMemoryPressure) == v1.ConditionTrue }), "MemoryPressure")
		n.Step(time.Minute)
		for _, name := range []string{"small", "static-node1"} {
			assert.Equal(t, v1.PodRunning, mustPod(t, n, name).Status.Phase, name)
		}
		assert.Equal(t, v1.ConditionTrue, nodeCondition(n, v1.NodeMemoryPressure))

		// Under memory pressure a new BestEffort pod is refused at
		// admission.
		n.AddPod(apiPod("late", ""))
		late := mustPod(t, n, "late")
		assert.Equal(t, v1.PodFailed, late.Status.Phase, "rejected at once")
		assert.Equal(t, "Evicted", late.Status.Reason)
		assert.Equal(t, "Pod was rejected: The node had condition: [MemoryPressure]. ", late.Status.Message)
		assert.Equal(t, []string{"Warning Evicted: The node had condition: [MemoryPressure]. "}, withoutTimes(eventsAbout(n, start, "Pod default/late")))
		assert.Zero(t, runningContainers(n, late.UID))

		var evictedPods []string
		for _, e := range n.Events() {
			if e.Reason == "Evicted" {
				evictedPods = append(evictedPods, e.Object)
			}
		}
		assert.Equal(t, []string{"Pod default/hog", "Pod default/late"}, evictedPods, "no other pod evicted or refused")
	})
}

// withoutTimes drops the times of eventsAbout's lines.
func withoutTimes(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		_, out[i], _ = strings.Cut(l, " ")
	}
	return out
}
