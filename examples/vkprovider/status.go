package vkprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeletkit/kubeletkit/status"
)

// notifyWorkers is how many NotifyPods callbacks may run at once, each for
// another pod.
const notifyWorkers = 4

// NotifyPods implements node.PodNotifier: cb receives a copy of each pod
// whose status the agent changed, carrying that status, for VK to write to
// the API server. Calls come from the provider's goroutines while Run runs,
// at most one at a time per pod and a few at once for different pods; a
// pod's statuses written while its callback runs are coalesced into the
// latest. A callback that blocks holds back that pod's statuses and takes
// one of the few workers, never the agent. The statuses of a pod whose name
// VK gave to a pod of another UID are dropped.
func (p *Provider) NotifyPods(ctx context.Context, cb func(*v1.Pod)) {
	if ctx == nil {
		ctx = context.Background()
	}
	p.notify.mu.Lock()
	defer p.notify.mu.Unlock()
	p.notify.cb, p.notify.cbCtx = cb, ctx
	p.notify.once.Do(func() { close(p.notify.registered) })
}

// notifier is the per-pod latest-status queue between the agent's status
// manager and VK's callback.
type notifier struct {
	queue      workqueue.TypedInterface[string] // pod keys with a status to deliver
	registered chan struct{}                    // closed by the first NotifyPods
	once       sync.Once

	mu      sync.Mutex
	cb      func(*v1.Pod)
	cbCtx   context.Context
	pending map[string]*v1.Pod // the latest undelivered status by pod key
}

func newNotifier() *notifier {
	return &notifier{queue: workqueue.NewTyped[string](), registered: make(chan struct{}), pending: map[string]*v1.Pod{}}
}

// put queues pod (a copy nobody else holds) for delivery.
func (n *notifier) put(k string, pod *v1.Pod) {
	n.mu.Lock()
	n.pending[k] = pod
	n.mu.Unlock()
	n.queue.Add(k)
}

// run delivers queued statuses once NotifyPods registered a callback, until
// ctx ends; it returns once the callbacks in progress have returned.
func (p *Provider) runNotifier(ctx context.Context) error {
	n := p.notify
	defer n.queue.ShutDown()
	select {
	case <-ctx.Done():
		return nil
	case <-n.registered:
	}
	var wg sync.WaitGroup
	for range notifyWorkers {
		wg.Go(func() {
			for p.deliverOne(ctx) {
			}
		})
	}
	<-ctx.Done()
	n.queue.ShutDown()
	wg.Wait()
	return nil
}

// deliverOne hands one pod's latest status to the callback; false once the
// queue is shut down.
func (p *Provider) deliverOne(ctx context.Context) bool {
	n := p.notify
	k, shutdown := n.queue.Get()
	if shutdown {
		return false
	}
	defer n.queue.Done(k)
	n.mu.Lock()
	pod, cb, cbCtx := n.pending[k], n.cb, n.cbCtx
	delete(n.pending, k)
	n.mu.Unlock()
	if pod == nil || ctx.Err() != nil || cbCtx.Err() != nil || !p.current(k, pod) {
		return true
	}
	cb(pod)
	return true
}

// current reports whether pod is the pod the provider holds under k, or a
// pod it no longer holds at all (whose last statuses still go out).
func (p *Provider) current(k string, pod *v1.Pod) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[k]
	return !ok || e.pod.UID == pod.UID
}

// statusSink is the agent's status.Sink: the provider's pods stand for the
// API server's, and a status written goes to VK through NotifyPods.
type statusSink struct{ p *Provider }

var _ status.Sink = statusSink{}

// GetPod implements status.Sink: the stored pod with the status last
// written. With Options.Pods, the conditions the node does not own (a
// readiness gate's, a controller's DisruptionTarget) are the API server's,
// as VK's informer holds them, so that the status manager keeps them in
// what it writes, as upstream's merge does: VK writes a pod's whole
// status.
func (s statusSink) GetPod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	p := s.p
	p.mu.Lock()
	e, ok := p.pods[key(pod.Namespace, pod.Name)]
	if !ok || e.pod.UID != pod.UID {
		p.mu.Unlock()
		return nil, fmt.Errorf("get pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
	}
	got := e.withStatus()
	p.mu.Unlock()
	if p.opts.Pods != nil {
		if api, err := p.opts.Pods.Pods(pod.Namespace).Get(pod.Name); err == nil && api.UID == pod.UID {
			// The node's conditions as written, the others as the API
			// server holds them now.
			conds := slices.DeleteFunc(got.Status.Conditions, func(c v1.PodCondition) bool { return !status.IsOwnedCondition(c.Type) })
			for _, c := range api.Status.Conditions {
				if !status.IsOwnedCondition(c.Type) {
					conds = append(conds, *c.DeepCopy())
				}
			}
			got.Status.Conditions = conds
		}
	}
	return got, nil
}

// UpdatePodStatus implements status.Sink: the status is stored and queued
// for VK. It never waits for VK.
func (s statusSink) UpdatePodStatus(_ context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	p := s.p
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	e, ok := p.pods[k]
	if !ok || e.pod.UID != pod.UID {
		p.mu.Unlock()
		return nil, fmt.Errorf("update status of pod %s: %w", k, status.ErrPodNotFound)
	}
	e.status = st.DeepCopy()
	updated, notified := e.withStatus(), e.withStatus()
	p.mu.Unlock()
	p.notify.put(k, notified)
	return updated, nil
}

// DeletePod implements status.Sink: the status manager found the pod
// deleted, terminal and stopped. With Options.Client the pod is deleted
// from the API server at once (grace period 0, UID precondition), as
// upstream's status manager does, once VK's informer (Options.Pods) shows
// its terminal status, so that the status reaches the API server first;
// without a client VK deletes it when its grace period ends. Either way
// the pod leaves the desired set.
func (s statusSink) DeletePod(ctx context.Context, pod *v1.Pod) error {
	p := s.p
	if p.deleter != nil {
		if err := p.waitTerminalInAPI(ctx, pod); err != nil {
			return err
		}
		if err := p.deleter.DeletePod(ctx, pod); err != nil && !errors.Is(err, status.ErrPodNotFound) {
			return err
		}
	}
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	if e, ok := p.pods[k]; ok && e.pod.UID == pod.UID {
		delete(p.pods, k)
	}
	p.mu.Unlock()
	p.changed()
	return nil
}

// terminalPoll is how often DeletePod looks for the pod's terminal status
// in VK's informer.
const terminalPoll = 20 * time.Millisecond

// waitTerminalInAPI waits until VK's informer (Options.Pods) shows the pod
// terminal, or gone, or ctx ends (the status manager's push timeout, then
// its retry). Without Options.Pods it returns at once.
func (p *Provider) waitTerminalInAPI(ctx context.Context, pod *v1.Pod) error {
	if p.opts.Pods == nil {
		return nil
	}
	t := p.clock.NewTicker(terminalPoll)
	defer t.Stop()
	for {
		api, err := p.opts.Pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || api.UID != pod.UID || api.Status.Phase == v1.PodSucceeded || api.Status.Phase == v1.PodFailed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete pod %s/%s: its terminal status is not in the API server yet: %w", pod.Namespace, pod.Name, ctx.Err())
		case <-t.C():
		}
	}
}
