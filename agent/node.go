package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// newNodeStatus builds the node status controller: the node's conditions
// (Ready from the runtime and the PLEG, pressure from eviction), capacity,
// addresses and declared features, served on /node and sent to
// Options.Cluster.NodeStatusSink; Controller.Status reads the last one
// built.
func (b *blocks) newNodeStatus() (*node.Controller, error) {
	addrs := make(node.StaticAddresses, 0, len(b.opts.Node.HostIPs)+1)
	for _, ip := range b.opts.Node.HostIPs {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: b.opts.NodeName})
	opts := node.Options{
		NodeName:           b.opts.NodeName,
		Sink:               b.opts.Cluster.NodeStatusSink,
		Leases:             b.opts.Cluster.Leases,
		LeaseDuration:      b.opts.Cluster.LeaseDuration,
		Clock:              b.clock,
		Runtime:            b.caps,
		Images:             b.rt,
		PLEG:               b.pleg,
		Machine:            b.opts.Node.Machine,
		Addresses:          addrs,
		StatusUpdatePeriod: b.opts.Timings.NodeStatus,
		StatusReportPeriod: b.opts.Timings.NodeStatusReport,
		DeclaredFeatures:   declaredFeatures(b.opts),
		Reservation:        b.nodeView.reservation,
		Logger:             b.log.With("component", "node-status"),
	}
	if b.evict != nil {
		opts.Pressure = b.evict
	}
	if b.devices != nil {
		opts.Extended = b.devices
	}
	if b.shutdown.Enabled() {
		opts.Shutdown = b.shutdown
	}
	if opts.Sink == nil {
		opts.Sink = node.StatusSinkFunc(func(context.Context, string, v1.NodeStatus) error { return nil })
	}
	return node.New(opts)
}
