package vkprovider

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/virtual-kubelet/virtual-kubelet/node"

	nodestatus "github.com/kubeletkit/kubeletkit/status/node"
)

var _ node.NodeProvider = (*Provider)(nil)

// healthPoll is how often Ping asks the agent again while it waits for the
// agent's first healthy answer.
const healthPoll = 50 * time.Millisecond

// Ping implements node.NodeProvider: the agent's health (agent.Healthy:
// the PLEG relists in time and the sync loop is not stuck). Until the
// agent has started and answered healthy once, Ping waits for it (or for
// ctx): VK registers the Node only after a successful ping. Once Run has
// returned, Ping fails with ErrNotRunning. A failing ping stops VK from
// renewing the Lease and posting the status, so that the node turns
// NotReady (Unknown) after the lease's duration.
func (p *Provider) Ping(ctx context.Context) error {
	select {
	case <-p.agent.Ready():
	case <-p.stopped:
		return fmt.Errorf("ping: %w", ErrNotRunning)
	case <-ctx.Done():
		return ctx.Err()
	}
	err := p.agent.Healthy()
	if err == nil || p.wasHealthy.Load() {
		if err == nil {
			p.wasHealthy.Store(true)
		}
		return err
	}
	t := p.clock.NewTicker(healthPoll)
	defer t.Stop()
	for {
		select {
		case <-p.stopped:
			return fmt.Errorf("ping: %w", ErrNotRunning)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		if err := p.agent.Healthy(); err == nil {
			p.wasHealthy.Store(true)
			return nil
		}
	}
}

// NotifyNodeStatus implements node.NodeProvider: cb receives the Node VK
// gave (Options.Node) with the agent's status merged in, every time the
// agent's node status changes (and at least every 5 minutes), from a
// goroutine of Run's, one call at a time. The provider stops calling it
// when ctx ends. VK's callback blocks for good once VK's node controller
// has stopped: a call still blocked a second after ctx or Run's ctx ended
// is abandoned (see Run).
func (p *Provider) NotifyNodeStatus(ctx context.Context, cb func(*v1.Node)) {
	if ctx == nil {
		ctx = context.Background()
	}
	n := p.node
	n.mu.Lock()
	n.cb, n.cbCtx = cb, ctx
	n.mu.Unlock()
	n.wakeUp()
}

// nodeNotifier keeps the latest node for VK's callback.
type nodeNotifier struct {
	base *v1.Node      // the Node VK gave; never modified
	wake chan struct{} // capacity 1

	mu     sync.Mutex
	latest *v1.Node // the newest merged node not yet delivered
	last   *v1.Node // the newest merged node
	cb     func(*v1.Node)
	cbCtx  context.Context
}

func (n *nodeNotifier) wakeUp() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// nodeSink is the agent's status/node StatusSink.
type nodeSink struct{ n *nodeNotifier }

var _ nodestatus.StatusSink = nodeSink{}

// UpdateNodeStatus implements node.StatusSink: the status is merged into
// the Node and queued for VK. It never waits for VK.
func (s nodeSink) UpdateNodeStatus(_ context.Context, _ string, st v1.NodeStatus) error {
	merged := MergeNodeStatus(s.n.base, st)
	s.n.mu.Lock()
	s.n.latest, s.n.last = merged, merged
	s.n.mu.Unlock()
	s.n.wakeUp()
	return nil
}

// abandonAfter is how long runNodeNotifier still waits for a callback in
// progress once it should stop.
const abandonAfter = time.Second

// runNodeNotifier hands the latest node to VK's callback until ctx ends.
// VK's callback sends on a channel of capacity 1 that its node controller
// drains until its ctx ends, and blocks forever after: a callback still
// blocked a second after ctx (or the callback's ctx) ended is abandoned,
// its goroutine with it, rather than holding Run up for good.
func (p *Provider) runNodeNotifier(ctx context.Context) error {
	n := p.node
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.wake:
		}
		n.mu.Lock()
		node, cb, cbCtx := n.latest, n.cb, n.cbCtx
		if cb != nil {
			n.latest = nil
		}
		n.mu.Unlock()
		if node == nil || cb == nil || cbCtx.Err() != nil || ctx.Err() != nil {
			continue
		}
		delivered := make(chan struct{})
		go func() {
			defer close(delivered)
			cb(node)
		}()
		select {
		case <-delivered:
			continue
		case <-ctx.Done():
		case <-cbCtx.Done():
		}
		t := p.clock.NewTimer(abandonAfter)
		select {
		case <-delivered:
		case <-t.C():
			p.log.Warn("VK's node status callback is blocked; abandoning it")
		}
		t.Stop()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Node returns the Node as last handed to VK (Options.Node with the agent's
// status merged in), and false before the agent built its first status.
func (p *Provider) Node() (*v1.Node, bool) {
	p.node.mu.Lock()
	defer p.node.mu.Unlock()
	if p.node.last == nil {
		return nil, false
	}
	return p.node.last.DeepCopy(), true
}

// MergeNodeStatus returns a copy of base whose status is st, the agent's
// (capacity, allocatable, conditions, addresses, daemon endpoints, node
// info, images), except where the agent has nothing to say: base's
// addresses when st has none, base's kubelet endpoint when st's port is 0
// (the agent serves no kubelet API: VK's server does), base's phase, and
// base's conditions of types st lacks, when they have a status.
func MergeNodeStatus(base *v1.Node, st v1.NodeStatus) *v1.Node {
	n := base.DeepCopy()
	old := n.Status
	st.DeepCopyInto(&n.Status)
	if len(n.Status.Addresses) == 0 {
		n.Status.Addresses = old.Addresses
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 {
		n.Status.DaemonEndpoints = old.DaemonEndpoints
	}
	n.Status.Phase = old.Phase
	for _, c := range old.Conditions {
		has := slices.ContainsFunc(n.Status.Conditions, func(o v1.NodeCondition) bool { return o.Type == c.Type })
		if !has && c.Status != "" {
			n.Status.Conditions = append(n.Status.Conditions, c)
		}
	}
	return n
}
