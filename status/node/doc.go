// Package node builds a node's status and keeps its lease, with upstream
// kubelet's semantics: what `kubectl describe node` shows.
//
// BuildStatus is a pure function from what small providers report to a
// v1.NodeStatus: capacity (Machine; LocalMachine reads the host) and
// allocatable (capacity minus Options.Reserved, never below zero), node info
// (the OS, the kubelet version, and the runtime as "name://version" from
// CRI Version), the conditions MemoryPressure, DiskPressure and PIDPressure
// (from Pressure, which the eviction block implements) and Ready, addresses
// and the 50 largest images, and the features the node declares
// (Options.DeclaredFeatures, sorted, as status.declaredFeatures). Reasons and messages are upstream's
// (KubeletReady "kubelet is posting ready status", KubeletHasSufficientMemory,
// ...). Ready is False with reason KubeletNotReady and a message naming each
// problem when the runtime cannot be reached ("container runtime is down:
// ..."), reports RuntimeReady or NetworkReady false, or the PLEG is unhealthy
// ("PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is
// 3m0s"), or the node is shutting down (Options.Shutdown: "node is shutting
// down"). Heartbeat times move every round; transition times only when a
// condition's status changes.
//
// A Controller drives it: every StatusUpdatePeriod (10s) it asks the
// providers (each call bounded by CallTimeout, 10s) and builds the status,
// and pushes it to a StatusSink when it changed (heartbeats aside) or when
// StatusReportPeriod (5m) passed since the last push; a failed push is tried
// again the next round. With a LeaseSink it keeps the node's Lease in
// kube-node-lease: created if missing, renewed every 10s with a 40s
// duration, and after a failure read again and retried after 200ms doubling
// up to 7s.
//
//	c, err := node.New(node.Options{
//		NodeName: "node1", Sink: statusSink, Leases: leaseSink,
//		Runtime: rt, Images: rt, PLEG: p, Machine: node.LocalMachine{},
//	})
//	if err != nil { ... }
//	go c.Run(ctx) // returns when ctx ends, after its goroutines
//
// Threading: BuildStatus is safe for concurrent use; a Controller's methods
// are safe for concurrent use and Run may be called once.
//
// Fakes: package nodetest has a Sink (status and lease, recording calls,
// failing or hanging on demand), a Runtime whose health a test sets, and a
// fixed Machine.
package node
