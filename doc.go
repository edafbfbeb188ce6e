// Package kubeletkit is the start page of kubeletkit, a Go SDK of Kubernetes
// node-agent building blocks: every part of a kubelet as a small package of
// its own, with upstream kubelet's semantics, a real implementation and a
// fake for tests. This package holds no code. Where to start depends on what
// you build:
//
// # Testing a controller against a node
//
// [github.com/kubeletkit/kubeletkit/agent/agenttest] runs a whole node in a
// unit test: the agent on the fake runtime (scripted containers: exit codes,
// crash loops, probes, hooks) and an in-memory API server, on a fake clock
// inside a testing/synctest bubble, deterministic. The guide is
// docs/testing-controllers.md. To run the controller's own reconciler
// against that node (client-go and controller-runtime clients with watches,
// on the same fake time), examples/nodetest. For a controller tested with controller-runtime's
// envtest, examples/envnode (its own module, github.com/kubeletkit/kubeletkit/examples)
// joins a node to that API server and runs the pods bound to it.
//
// # An edge agent: your own pod source, status sink or runtime
//
// [github.com/kubeletkit/kubeletkit/agent] is the kubelet as a block: New
// with Options, then Run. Options.Sources reads static pods from a
// directory or a URL; Options.Cluster is the seam an API server fills (pod
// updates, a status sink, the Node, events), and any part of it can be your
// own; Options.Runtime takes any CRI runtime ([github.com/kubeletkit/kubeletkit/cri].Dial
// for containerd or CRI-O) or, left nil, the embedded fake. The Example
// below gives an agent a pod of its own. examples/minikubelet is the reference wiring (flags and
// upstream's KubeletConfiguration file, [github.com/kubeletkit/kubeletkit/kubeletconfig],
// to Options) and examples/apiserver joins an agent to a real cluster as
// kubeadm joins a kubelet (docs/real-node.md).
//
// # A virtual-kubelet provider
//
// examples/vkprovider is a virtual-kubelet provider built on the blocks
// (pod workers, probes, statuses, volumes, CRI configs) and examples/vknode
// runs it as a node (docs/virtual-kubelet.md). Its backend implements
// agent.Runtime, 18 methods, with exec, stats, events and status as optional
// capabilities (docs/providers.md). A provider whose backend cannot run a
// pod's containers one at a time takes the blocks it needs one by one:
// [github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig] for what a
// container is given, [github.com/kubeletkit/kubeletkit/status] for its pod
// status, [github.com/kubeletkit/kubeletkit/prober] for its probes.
//
// # One block on its own
//
// Each block's package documentation and its guide in docs/ say what it
// decides and which upstream behaviour it follows; the README's table lists
// them all, and docs/architecture.md shows how the agent wires them.
package kubeletkit
