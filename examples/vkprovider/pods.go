package vkprovider

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// InitialSyncTimeout bounds how long the first pod set waits for VK to hand
// over the pods its informer lists (see Options.Pods).
const InitialSyncTimeout = 10 * time.Second

var (
	_ node.PodLifecycleHandler = (*Provider)(nil)
	_ node.PodNotifier         = (*Provider)(nil)
)

// entry is one desired pod: the pod as VK last gave it, never modified
// once stored (a change stores a new copy, so that the pod set sends the
// same pointer for an unchanged pod), and the status the agent last wrote.
type entry struct {
	pod    *v1.Pod
	status *v1.PodStatus // nil before the agent's first status
}

// withStatus returns a copy of the entry's pod carrying its status.
func (e *entry) withStatus() *v1.Pod {
	p := e.pod.DeepCopy()
	if e.status != nil {
		e.status.DeepCopyInto(&p.Status)
	}
	return p
}

func key(namespace, name string) string { return namespace + "/" + name }

// CreatePod implements node.PodLifecycleHandler: the pod joins the desired
// set, which the agent receives at once. It only touches memory: a pod the
// agent then refuses or cannot run gets a status saying why, never an
// error here (VK would mark it ProviderFailed). A pod without a UID or a
// name is invalid input.
func (p *Provider) CreatePod(_ context.Context, pod *v1.Pod) error {
	return p.put(pod)
}

// UpdatePod implements node.PodLifecycleHandler as CreatePod: the pod
// replaces the one of its name (a pod of another UID is a new pod).
func (p *Provider) UpdatePod(_ context.Context, pod *v1.Pod) error {
	return p.put(pod)
}

func (p *Provider) put(pod *v1.Pod) error {
	if pod == nil || pod.UID == "" || pod.Name == "" {
		return errdefs.InvalidInput("a pod needs a name and a UID")
	}
	k := key(pod.Namespace, pod.Name)
	cp := pod.DeepCopy()
	p.mu.Lock()
	if e, ok := p.pods[k]; ok && e.pod.UID == pod.UID {
		p.pods[k] = &entry{pod: cp, status: e.status}
	} else {
		p.pods[k] = &entry{pod: cp}
	}
	p.mu.Unlock()
	p.changed()
	return nil
}

// DeletePod implements node.PodLifecycleHandler. VK calls it when the pod
// gets a deletion timestamp (and again when its grace period shortens):
// the pod, deletion timestamp and grace period included, replaces the
// stored one, and the agent terminates it gracefully (preStop hooks, then
// SIGTERM, and SIGKILL at the end of the grace period), reporting the
// terminated containers. VK calls it once more after the pod left the API
// server, and for pods the API server never held: the pod then leaves the
// desired set, and the agent kills what still runs and forgets it. With
// Options.Pods, the pod left the API server when the lister no longer
// holds its UID; without it, when the call carries no deletion timestamp
// or the very deletion already stored. A pod the provider does not hold is
// NotFound, except, with Options.Pods, one the API server holds with a
// deletion timestamp (deleted while VK was down: the agent adopts its
// containers and stops them gracefully). It never waits for the agent.
func (p *Provider) DeletePod(_ context.Context, pod *v1.Pod) error {
	if pod == nil {
		return errdefs.InvalidInput("no pod")
	}
	k := key(pod.Namespace, pod.Name)
	inAPI := p.opts.Pods == nil
	if !inAPI {
		api, err := p.opts.Pods.Pods(pod.Namespace).Get(pod.Name)
		inAPI = err == nil && api.UID == pod.UID
	}
	p.mu.Lock()
	e, ok := p.pods[k]
	if !ok && pod.DeletionTimestamp != nil && p.opts.Pods != nil && inAPI && pod.UID != "" {
		// A pod deleted while VK was down (VK deletes rather than
		// creates it): the agent adopts what runs and stops it gracefully.
		e, ok = &entry{pod: pod}, true
	}
	if !ok || (pod.UID != "" && e.pod.UID != pod.UID) {
		p.mu.Unlock()
		return podNotFound(pod.Namespace, pod.Name)
	}
	graceful := pod.DeletionTimestamp != nil && inAPI && (p.opts.Pods != nil || !sameDeletion(e.pod, pod))
	if graceful {
		p.pods[k] = &entry{pod: pod.DeepCopy(), status: e.status}
	} else {
		delete(p.pods, k)
	}
	p.mu.Unlock()
	p.changed()
	return nil
}

// sameDeletion reports whether stored already carries pod's deletion.
func sameDeletion(stored, pod *v1.Pod) bool {
	return stored.DeletionTimestamp != nil && stored.DeletionTimestamp.Equal(pod.DeletionTimestamp) &&
		ptr.Equal(stored.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds)
}

// GetPod implements node.PodLifecycleHandler: the stored pod with the
// status the agent last wrote. With Options.Pods, a pod whose name the API
// server gives to a pod of another UID is NotFound, so that VK creates the
// new pod rather than taking the old one for it.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	p.mu.Lock()
	e, ok := p.pods[key(namespace, name)]
	var pod *v1.Pod
	if ok {
		pod = e.withStatus()
	}
	p.mu.Unlock()
	if !ok {
		return nil, podNotFound(namespace, name)
	}
	if p.opts.Pods != nil {
		if api, err := p.opts.Pods.Pods(namespace).Get(name); err == nil && api.UID != pod.UID {
			return nil, podNotFound(namespace, name)
		}
	}
	return pod, nil
}

// GetPodStatus implements node.PodLifecycleHandler: the status the agent
// last wrote (the pod's own before the first).
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods implements node.PodLifecycleHandler: every stored pod with its
// status, in no order. VK's pod controller calls it once its informer has
// synced, to delete the pods the API server does not hold.
func (p *Provider) GetPods(context.Context) ([]*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listed = true
	out := make([]*v1.Pod, 0, len(p.pods))
	for _, e := range p.pods {
		out = append(out, e.withStatus())
	}
	p.signal()
	return out, nil
}

// changed signals the pod feed that the desired set changed.
func (p *Provider) changed() {
	p.mu.Lock()
	p.version++
	p.signal()
	p.mu.Unlock()
}

// signal wakes the pod feed; p.mu is held.
func (p *Provider) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// desired returns the desired pods and the version of the set.
func (p *Provider) desired() ([]*v1.Pod, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(p.pods))
	for _, e := range p.pods {
		pods = append(pods, e.pod)
	}
	return pods, p.version
}

// handedOver reports whether VK has passed every pod it will: without
// Options.Pods at once; with it, once VK listed the provider's pods (its
// informer has synced) and every pod the lister holds for the node that VK
// creates in a provider (not terminal, not being deleted) is stored.
func (p *Provider) handedOver() bool {
	if p.opts.Pods == nil {
		return true
	}
	p.mu.Lock()
	listed := p.listed
	p.mu.Unlock()
	if !listed {
		return false
	}
	pods, err := p.opts.Pods.List(labels.Everything())
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range pods {
		if pod.Spec.NodeName != p.agent.NodeName() || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if e, ok := p.pods[key(pod.Namespace, pod.Name)]; !ok || e.pod.UID != pod.UID {
			return false
		}
	}
	return true
}

// feed sends the agent the complete desired set, a syncloop.OpSet that the
// agent's merger turns into ADD, UPDATE, DELETE and REMOVE, whenever it
// changes. The first SET, which tells the agent that the API server's pods
// are known (so that it may kill what runs for no desired pod), waits until
// VK handed over its pods, or InitialSyncTimeout.
func (p *Provider) feed(ctx context.Context) error {
	timeout := p.clock.NewTimer(InitialSyncTimeout)
	defer timeout.Stop()
	timedOut := false
	var gates <-chan time.Time // nil: never
	if p.opts.Pods != nil {
		t := p.clock.NewTicker(GatePoll)
		defer t.Stop()
		gates = t.C()
	}
	sent, first := uint64(0), true
	for {
		if pods, version := p.desired(); (first && (timedOut || p.handedOver())) || (!first && version != sent) {
			select {
			case p.updates <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: pods}:
				sent, first = version, false
			case <-ctx.Done():
				return nil
			}
			continue // the set may have changed while it was sent
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-timeout.C():
			timedOut = true
		case <-gates:
			p.refreshGates()
		}
	}
}

// GatePoll is how often, with Options.Pods, the provider reads from VK's
// informer the conditions of the pods' readiness gates, which another
// writer sets in the API server and VK never passes on (it calls UpdatePod
// for spec, label and annotation changes only).
const GatePoll = time.Second

// refreshGates hands the agent the API server's status of every pod with
// readiness gates whose gate conditions changed there: the agent's merger
// makes it a RECONCILE, and the agent computes Ready again, as upstream
// does when its informer brings such a change.
func (p *Provider) refreshGates() {
	type gated struct {
		k string
		e *entry
	}
	var pods []gated
	p.mu.Lock()
	for k, e := range p.pods {
		if len(e.pod.Spec.ReadinessGates) > 0 {
			pods = append(pods, gated{k, e})
		}
	}
	p.mu.Unlock()
	for _, g := range pods {
		api, err := p.opts.Pods.Pods(g.e.pod.Namespace).Get(g.e.pod.Name)
		if err != nil || api.UID != g.e.pod.UID || sameGates(g.e.pod, &api.Status) {
			continue
		}
		pod := g.e.pod.DeepCopy()
		api.Status.DeepCopyInto(&pod.Status)
		p.mu.Lock()
		if cur, ok := p.pods[g.k]; ok && cur == g.e {
			p.pods[g.k] = &entry{pod: pod, status: cur.status}
			p.version++
		}
		p.mu.Unlock()
	}
}

// sameGates reports whether st holds the same conditions of pod's
// readiness gates as pod's own status.
func sameGates(pod *v1.Pod, st *v1.PodStatus) bool {
	find := func(conds []v1.PodCondition, t v1.PodConditionType) (v1.ConditionStatus, bool) {
		for _, c := range conds {
			if c.Type == t {
				return c.Status, true
			}
		}
		return "", false
	}
	for _, g := range pod.Spec.ReadinessGates {
		a, aok := find(pod.Status.Conditions, g.ConditionType)
		b, bok := find(st.Conditions, g.ConditionType)
		if a != b || aok != bok {
			return false
		}
	}
	return true
}
