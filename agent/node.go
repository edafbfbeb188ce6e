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
func (a *Agent) newNodeStatus() (*node.Controller, error) {
	addrs := make(node.StaticAddresses, 0, len(a.opts.Node.HostIPs)+1)
	for _, ip := range a.opts.Node.HostIPs {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: a.opts.NodeName})
	opts := node.Options{
		NodeName:           a.opts.NodeName,
		Sink:               a.opts.Cluster.NodeStatusSink,
		Leases:             a.opts.Cluster.Leases,
		LeaseDuration:      a.opts.Cluster.LeaseDuration,
		Clock:              a.clock,
		Runtime:            a.rt,
		Images:             a.rt,
		PLEG:               a.pleg,
		Machine:            a.opts.Node.Machine,
		Addresses:          addrs,
		StatusUpdatePeriod: a.opts.Timings.NodeStatus,
		DeclaredFeatures:   a.opts.Node.DeclaredFeatures,
		Reservation:        a.reservation,
		Logger:             a.log.With("component", "node-status"),
	}
	if a.evict != nil {
		opts.Pressure = a.evict
	}
	if a.devices != nil {
		opts.Extended = a.devices
	}
	if a.shutdown.Enabled() {
		opts.Shutdown = a.shutdown
	}
	if opts.Sink == nil {
		opts.Sink = node.StatusSinkFunc(func(context.Context, string, v1.NodeStatus) error { return nil })
	}
	return node.New(opts)
}
