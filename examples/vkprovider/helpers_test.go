package vkprovider_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
)

// The tests drive a Provider as VK's pod controller would: CreatePod,
// UpdatePod and DeletePod, a NotifyPods callback that records statuses,
// GetPod and friends; on the agent's embedded fake runtime and the real
// clock, with upstream's periods shortened.

const (
	nodeName = "vk-node"
	hostIP   = "192.0.2.10"
	// wait bounds every wait for a condition. The test takes about a
	// second alone; 15s was passed twice in the README's test command on
	// a machine also running a cold CI (load average 20).
	wait = 45 * time.Second
)

// fast are upstream's periods divided so that a pod runs and turns Ready
// within a second.
var fast = agent.Timings{
	RelistPeriod:   100 * time.Millisecond,
	SourcePeriod:   200 * time.Millisecond,
	BackoffInitial: 200 * time.Millisecond,
	BackoffMax:     2 * time.Second,
	WorkerBackOff:  200 * time.Millisecond,
	Resync:         5 * time.Second,
	Housekeeping:   200 * time.Millisecond,
	NodeStatus:     100 * time.Millisecond,
	VolumeRefresh:  200 * time.Millisecond,
}

// env is a running Provider and what VK's callbacks received.
type env struct {
	t *testing.T
	p *vkprovider.Provider

	mu       sync.Mutex
	statuses map[string][]*v1.Pod // by namespace/name, in order
	nodes    []*v1.Node
	changed  chan struct{} // closed and replaced at every callback
	// block, when set, is called by the pod callback first (a VK that
	// blocks).
	block func(*v1.Pod)
}

// testOptions are a provider's options for a test: the embedded fake
// runtime under a temporary root, nothing mounted, eviction seeing an idle
// machine.
func testOptions(t *testing.T) vkprovider.Options {
	o := vkprovider.Options{Agent: agent.Options{
		NodeName: nodeName,
		RootDir:  t.TempDir(),
		Node:     agent.NodeOptions{HostIPs: []string{hostIP}},
		Security: agent.SecurityOptions{NoMounts: true},
		Timings:  fast,
	}}
	o.Agent.Eviction.Stats = &evictiontest.Stats{}
	if os.Getenv("KK_DEBUG") != "" {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return o
}

// start runs a provider built from opts until the test ends, with VK's
// callbacks registered.
func start(t *testing.T, opts vkprovider.Options) *env {
	t.Helper()
	p, err := vkprovider.New(opts)
	require.NoError(t, err)
	e := &env{t: t, p: p, statuses: map[string][]*v1.Pod{}, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	p.NotifyPods(ctx, e.notePod)
	p.NotifyNodeStatus(ctx, e.noteNode)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(wait):
			t.Error("Run did not return")
		}
	})
	select {
	case <-p.Agent().Ready():
	case err := <-done:
		t.Fatalf("Run returned at start: %v", err)
	case <-time.After(wait):
		t.Fatal("the agent did not start")
	}
	return e
}

func (e *env) notePod(p *v1.Pod) {
	e.mu.Lock()
	block := e.block
	e.mu.Unlock()
	if block != nil {
		block(p)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	e.statuses[k] = append(e.statuses[k], p)
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *env) noteNode(n *v1.Node) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes = append(e.nodes, n)
	close(e.changed)
	e.changed = make(chan struct{})
}

// until waits for cond, checked under the lock at every callback.
func (e *env) until(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(wait)
	for {
		e.mu.Lock()
		ok, changed := cond(), e.changed
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitPod waits until VK is told a status of the pod name that satisfies
// cond, and returns that pod.
func (e *env) waitPod(name string, cond func(*v1.Pod) bool) *v1.Pod {
	e.t.Helper()
	var got *v1.Pod
	seen := 0
	e.until("pod "+name, func() bool {
		pods := e.statuses["default/"+name]
		for ; seen < len(pods); seen++ {
			if cond(pods[seen]) {
				got = pods[seen]
				return true
			}
		}
		return false
	})
	return got
}

// last returns the latest status VK was told of the pod name.
func (e *env) last(name string) *v1.Pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	pods := e.statuses["default/"+name]
	if len(pods) == 0 {
		return nil
	}
	return pods[len(pods)-1]
}

// newPod is a pod bound to the node with one container per image.
func newPod(name string, images ...string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec:       v1.PodSpec{NodeName: nodeName, RestartPolicy: v1.RestartPolicyAlways},
	}
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: img,
			TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent})
	}
	return p
}

// running: the pod is Running and Ready.
func running(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && condition(p, v1.PodReady) == v1.ConditionTrue
}

// condition is the status of the pod's condition t, "" when absent.
func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// waitingReason is the waiting reason of the pod's first container.
func waitingReason(p *v1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return ""
	}
	return p.Status.ContainerStatuses[0].State.Waiting.Reason
}

// deleting returns a copy of pod as the API server marks it deleted with
// a grace period of grace seconds.
func deleting(pod *v1.Pod, grace int64) *v1.Pod {
	p := pod.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	p.DeletionGracePeriodSeconds = &grace
	return p
}
