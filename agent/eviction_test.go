package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

const (
	mi = 1 << 20
	gi = 1 << 30
)

// pressureStats is a node of a fixed memory capacity on which each pod
// with a set usage uses that much while it has a running container: when
// the eviction manager kills a pod, its memory comes back. Every Get is a
// fresh measurement, as the manager acts only on stats newer than its last
// pass.
type pressureStats struct {
	rt       agent.Runtime
	mu       sync.Mutex
	capacity uint64
	usage    map[*v1.Pod]uint64
}

func (s *pressureStats) set(capacity uint64, usage map[*v1.Pod]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity, s.usage = capacity, usage
}

func (s *pressureStats) Get(ctx context.Context) (*stats.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	sum := &stats.Summary{}
	var used uint64
	for p, ws := range s.usage {
		running, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{cri.PodUIDLabel: string(p.UID)}})
		if err != nil {
			return nil, err
		}
		if len(running) == 0 {
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

// apiPod is a pod as an API server would hand it over: defaulted, with a
// UID, bound to the node.
func apiPod(name string, memoryRequest string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: name, Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}
	if memoryRequest != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memoryRequest)}
	}
	source.DefaultPod(p)
	return p
}

func TestMemoryPressureEvictsTheRightPod(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	st := &pressureStats{rt: rt, capacity: 8 * gi}
	api := make(chan syncloop.PodUpdate)
	n := startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, Updates: api,
		Eviction: agent.EvictionOptions{Stats: st, MonitoringInterval: 100 * time.Millisecond, PressureTransitionPeriod: time.Hour}})
	send := func(op syncloop.Operation, pods ...*v1.Pod) {
		select {
		case api <- syncloop.PodUpdate{Op: op, Source: syncloop.SourceAPI, Pods: pods}:
		case <-time.After(10 * time.Second):
			t.Fatal("the agent did not take the API update")
		}
	}

	// From the API server: hog has no requests and uses 1Gi, small asks
	// for 100Mi and uses 10Mi. A static pod uses 2Gi: static pods are
	// critical, never evicted.
	hog, small := apiPod("hog", ""), apiPod("small", "100Mi")
	send(syncloop.OpSet, hog, small)
	n.write("static.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  containers:
  - {name: static, image: busybox:1.36, command: [sleep, "3600"]}
`)
	for _, name := range []string{"hog", "small", "static-node1"} {
		n.waitPod(name, "Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	static := n.pods()["static-node1"]

	// Memory available drops to 50Mi, under the default hard threshold
	// (100Mi), while hog runs.
	st.set(gi+10*mi+2*gi+50*mi, map[*v1.Pod]uint64{hog: gi, small: 10 * mi, &static: 2 * gi})
	evicted := n.waitPod("hog", "evicted", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	assert.Equal(t, "Evicted", evicted.Status.Reason)
	assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container hog was using 1Gi, request is 0, has larger consumption of memory. ", evicted.Status.Message)
	assert.Equal(t, v1.ConditionTrue, condition(evicted, v1.DisruptionTarget))
	require.Len(t, evicted.Status.ContainerStatuses, 1)
	waitNoRunning(t, n.a.Runtime(), string(hog.UID))
	n.waitPod("hog", "container terminated", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})

	// hog's memory came back: no other pod is evicted, and the node shows
	// the pressure on /node for the transition period.
	n.waitNodeCondition(v1.NodeMemoryPressure, v1.ConditionTrue)
	for _, name := range []string{"small", "static-node1"} {
		assert.Equal(t, v1.PodRunning, n.pods()[name].Status.Phase, name)
	}

	// Under memory pressure a new BestEffort pod is refused at admission.
	send(syncloop.OpAdd, apiPod("late", ""))
	late := n.waitPod("late", "rejected", func(p v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	assert.Equal(t, "Evicted", late.Status.Reason)
	assert.Equal(t, "Pod was rejected: The node had condition: [MemoryPressure]. ", late.Status.Message)
}
