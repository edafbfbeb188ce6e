// Command scalenodes runs many kubeletkit nodes in one process against an
// API server, and the load that measures them: hack/scale.sh drives it, in
// CI (50 nodes x 30 pods) and for the benchmark of docs/scale.md (100
// nodes x 110 pods).
//
//	scalenodes nodes --kubeconfig admin.kubeconfig --nodes 100 --node-name-prefix hollow- \
//		--crash-ratio 0.01 --pull-latency 2s --pprof-address 127.0.0.1:6060
//	scalenodes load --kubeconfig admin.kubeconfig --nodes 100 --pods-per-node 110 --rate 50 --probes 3
//	scalenodes heartbeat --kubeconfig admin.kubeconfig --nodes 100 --for 2m
//	scalenodes twin --kubeconfig admin.kubeconfig --from hollow-0000 --to kk-node --namespace scalenodes-twin
//	scalenodes clean --kubeconfig admin.kubeconfig
//
// "nodes" runs an examples/nodefarm farm: every node a whole package agent
// on a fake runtime of its own (scripted by --crash-ratio, --crash-after and
// --pull-latency), with its own Node and Lease, all on one clientset
// allowed --kube-api-qps and --kube-api-burst per node, until SIGINT or
// SIGTERM. --pprof-address serves net/http/pprof.
//
// "load" waits until the nodes are Ready, creates --pods-per-node pods on
// each (spec.nodeName set, so that no scheduler is needed) at --rate pods
// per second, each with --probes exec probes, and watches them: a pod's
// startup latency runs from the moment its creation is sent to the first
// watch event that shows it Running (and Ready). It prints the 50th, 90th
// and 99th percentiles and fails when a pod is not Ready within --timeout.
//
// "heartbeat" lists the nodes' Leases every --period for --for and prints
// the percentiles of how long ago each was renewed: a node renews every
// quarter of its lease duration (10s of 40s), so ages stay under that plus
// the renewal's own latency on a node that keeps up.
//
// "twin" copies every pod of a farm node (--from) to another node (--to,
// a single minikubelet): the same names, labels, annotations and spec, in
// --namespace, which it creates when missing with the default
// ServiceAccount and a copy of the ConfigMaps and Secrets the pods' volumes
// read, as the controller manager this control plane lacks would. It waits
// until the copies are Ready, so that hack/scale.sh can record both nodes'
// pods at once and compare them by name (hack/fidelity compare): the
// farm's statuses against a single minikubelet's.
//
// "clean" deletes the pods of every load run (grace period 0), the Nodes
// whose names have the prefix and their Leases.
package main
