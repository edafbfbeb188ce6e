package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/volume"
)

// ShutdownOptions configure graceful node shutdown (package nodeshutdown).
// The zero value leaves it off, as upstream's default shutdownGracePeriod
// of zero: the node goes down with its pods.
type ShutdownOptions struct {
	// GracePeriod is upstream's shutdownGracePeriod: how long the node
	// gives its pods to terminate when it shuts down. Zero: off.
	GracePeriod time.Duration
	// GracePeriodCriticalPods is upstream's
	// shutdownGracePeriodCriticalPods: the part of GracePeriod kept for
	// critical pods (priority 2000000000 and up), terminated after the
	// others. It must not exceed GracePeriod.
	GracePeriodCriticalPods time.Duration
	// ByPodPriority is upstream's shutdownGracePeriodByPodPriority,
	// instead of the two periods above.
	ByPodPriority []nodeshutdown.PriorityGracePeriod
	// Trigger tells the agent that the machine is shutting down; Run runs
	// it. Nil means only Agent.Shutdown does (see nodeshutdown.Signal).
	Trigger nodeshutdown.Trigger
}

// newShutdown builds the node's shutdown manager: the active pods, killed
// through the workers with upstream's status, their volumes waited for, a
// node status pushed at once.
func (b *blocks) newShutdown() (*nodeshutdown.Manager, error) {
	o := b.opts.Shutdown
	view, vol, nv, log := b.view, b.vol, b.nodeView, b.log
	if o.Trigger != nil && o.GracePeriod == 0 && len(o.ByPodPriority) == 0 {
		return nil, fmt.Errorf("shutdown: a trigger without a grace period: %w", ErrInvalidOptions)
	}
	m, err := nodeshutdown.New(nodeshutdown.Options{
		GracePeriod:             o.GracePeriod,
		GracePeriodCriticalPods: o.GracePeriodCriticalPods,
		ByPodPriority:           o.ByPodPriority,
		Pods:                    view.active,
		Killer:                  nodeshutdown.KillerFunc(view.killForShutdown),
		Unmounter:               unmounterFunc(func(ctx context.Context, pods []*v1.Pod) error { return waitForUnmount(ctx, vol, pods) }),
		OnShutdown: func(ctx context.Context) {
			if err := nv.status.SyncStatus(ctx); err != nil && ctx.Err() == nil {
				log.Warn("Node status at shutdown", "err", err)
			}
		},
		Recorder: b.events,
		NodeRef:  &v1.ObjectReference{Kind: "Node", Name: b.opts.NodeName},
		Clock:    b.clock,
		Logger:   log.With("component", "nodeshutdown"),
	})
	if err != nil {
		// The message says "invalid options" already; errors.Is finds
		// ErrInvalidOptions too.
		return nil, fmt.Errorf("%w%.0w", err, ErrInvalidOptions)
	}
	return m, nil
}

// killForShutdown terminates the pod through its worker with the shutdown's
// grace period and status, and waits for its containers to stop.
func (v *podView) killForShutdown(ctx context.Context, pod *v1.Pod, grace int64, status func(*v1.PodStatus)) error {
	return v.workers.KillPod(ctx, pod, podworkers.KillPodOptions{
		PodTerminationGracePeriodSecondsOverride: &grace,
		PodStatusFunc:                            status,
	})
}

// waitForUnmount waits until the pods' volumes are torn down.
func waitForUnmount(ctx context.Context, vol *volume.Manager, pods []*v1.Pod) error {
	var errs []error
	for _, p := range pods {
		if err := vol.WaitForUnmount(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", podDesc(p), err))
		}
	}
	return errors.Join(errs...)
}

type unmounterFunc func(ctx context.Context, pods []*v1.Pod) error

func (f unmounterFunc) WaitForUnmount(ctx context.Context, pods []*v1.Pod) error { return f(ctx, pods) }

// Shutdown shuts the node down gracefully, as a trigger would (see
// ShutdownOptions): the node reports NotReady ("node is shutting down"),
// refuses new pods (NodeShutdown), and terminates its pods, lowest priority
// first, within the grace periods; it returns once they are terminated or
// the budget is spent. Call it while Run runs. Without a grace period it
// does nothing, as upstream's kubelet. The node stays shutting down until
// CancelShutdown.
func (a *Agent) Shutdown(ctx context.Context) error { return a.shutdown.Shutdown(ctx) }

// CancelShutdown calls a shutdown off: the node is Ready and admits pods
// again; the pods it terminated stay terminated.
func (a *Agent) CancelShutdown() { a.shutdown.Cancel() }

// ShutdownDone is closed once a shutdown has terminated the node's pods (or
// spent its budget): a program stops the agent then, and the machine goes
// on shutting down.
func (a *Agent) ShutdownDone() <-chan struct{} { return a.shutdown.Done() }
