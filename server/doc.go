// Package server is the kubelet's HTTP API as a block: today the read-only
// endpoints of upstream's read-only port, over small interfaces that
// package agent implements.
//
//	/healthz  "ok" while Health.Healthy returns nil, else 500 with its reasons
//	/pods     a v1.PodList of the node's pods with their live statuses
//	/node     a v1.Node with the node's status: conditions, capacity,
//	          addresses, node info
//	/metrics  Options.Metrics (absent when nil): the core has no metrics
//	          library, and examples/prometheus serves one with client_golang
//
// Build one with New over the node's parts, then Serve it on a listener
// until the context ends, or mount Handler in a server of your own:
//
//	srv := server.New(server.Options{Pods: a, Node: a, Health: a})
//	err := srv.Serve(ctx, listener)
//
// The handlers are safe for concurrent use; they call the interfaces from
// the request's goroutine.
package server
