package agent

import (
	"context"
	"encoding/json"
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// newNodeStatus builds the node status controller: the node's conditions
// (Ready from the runtime and the PLEG, pressure from eviction), capacity
// and addresses, served on /node. Without an API server its sink only
// keeps the status; Controller.Status reads the last one built.
func (a *Agent) newNodeStatus() (*node.Controller, error) {
	addrs := make(node.StaticAddresses, 0, len(a.opts.HostIPs)+1)
	for _, ip := range a.opts.HostIPs {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: a.opts.NodeName})
	opts := node.Options{
		NodeName:           a.opts.NodeName,
		Sink:               node.StatusSinkFunc(func(context.Context, string, v1.NodeStatus) error { return nil }),
		Runtime:            a.rt,
		Images:             a.rt,
		PLEG:               a.pleg,
		Machine:            node.LocalMachine{},
		Addresses:          addrs,
		StatusUpdatePeriod: a.opts.Timings.NodeStatus,
		Logger:             a.log.With("component", "node-status"),
	}
	if a.evict != nil {
		opts.Pressure = a.evict
	}
	if a.api != nil {
		opts.Sink, opts.Leases = a.api.nodes, a.api.nodes
		opts.LeaseDuration = a.opts.API.NodeLeaseDuration
	}
	return node.New(opts)
}

// serveNode writes the node as a v1.Node: its name and the last status the
// controller built (conditions, capacity, addresses, node info).
func (a *Agent) serveNode(w http.ResponseWriter, _ *http.Request) {
	n := v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: a.opts.NodeName}}
	n.Status, _ = a.node.Status()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&n); err != nil {
		a.log.Warn("Failed to write /node", "err", err)
	}
}
