// Package nodefarm runs many kubelets in one process for scale tests of
// schedulers, controllers and the control plane: each node is a whole
// package agent (the same syncloop, pod workers, probes, restarts,
// back-off, termination and statuses as a single minikubelet) with its own
// name, its own in-memory runtime (cri/fake) and its own Node and Lease in
// the API server, where kubemark's hollow nodes cost a process each and
// KWOK's nodes move pods through scripted stages.
//
//	client := kubernetes.NewForConfigOrDie(restConfig) // QPS and burst for every node
//	f, err := nodefarm.New(client, nodefarm.Options{Nodes: 100, NamePrefix: "hollow-", RootDir: dir,
//		Script: func(i int) nodefarm.Script { return nodefarm.Script{CrashRatio: 0.01, PullLatency: 2 * time.Second} }})
//	if err != nil { ... }
//	err = f.Run(ctx) // until ctx ends
//
// # What the nodes share
//
// One clientset, so one connection to the API server (HTTP/2 streams), and
// apiserver.Shared: the services' watch, the watches of the configMaps and
// secrets pods read, token requests, and one event broadcaster on which
// every node records under its own host. What depends on the node stays
// per node, as on real nodes: the pod watch (spec.nodeName=<node>), the
// Node's status, the Lease, pod statuses, mirror pods. The nodes share the
// Go runtime's timers, which are one heap per processor whichever node set
// them.
//
// # The machine a node declares
//
// Every node reports Options.Machine (DefaultMachine: 32 CPUs, 256Gi,
// 1Ti, 110 pods) and its eviction manager weighs that machine, not the
// host: the node's memory and filesystems are the declared capacity less
// what its pods, their logs and volumes and the runtime's images use, as
// kubemark's hollow nodes read a fake cAdvisor. Upstream's default
// thresholds apply to those figures.
//
// # Scripting a node
//
// Script says what node i's runtime does: CrashRatio of the containers it
// starts exit with code 1 after CrashAfter (their pods then restart and
// back off as upstream's), every image pull takes PullLatency, and Rules
// and ExecRules are the fake runtime's own (a container that exits, an
// exec probe that fails). Node.Runtime is the node's runtime, for scripting
// while it runs.
//
// # Threading
//
// New starts nothing. Run runs the shared adapters and every node's agent
// and adapters (apiserver.Joined.Run) in goroutines, and returns once they
// have all ended; a node whose agent fails ends alone. examples/scalenodes
// is the command that runs a farm, and its load generator.
package nodefarm
