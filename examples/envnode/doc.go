// Package envnode gives a test control plane nodes that run pods.
// controller-runtime's envtest starts a kube-apiserver and etcd, and nothing
// else: no kubelet, no scheduler, no controller-manager, so the pods a
// controller creates stay Pending forever. Start joins a whole kubelet
// (package agent, on the in-process cri/fake runtime) to such an API
// server, and stands in for the two missing parts that a pod's life
// needs: a Binder binds the pods that fit the node (the scheduler's job),
// and the node keeps its NoSchedule condition taints in step with its
// conditions (the node lifecycle controller's job, which in envtest is
// first of all to take away the node.kubernetes.io/not-ready taint the API
// server puts on every new Node).
//
//	env := &envtest.Environment{}
//	cfg, err := env.Start()             // kube-apiserver and etcd from $KUBEBUILDER_ASSETS
//	defer env.Stop()
//	n, err := envnode.Start(ctx, cfg, envnode.Options{})
//	defer n.Stop()                      // before env.Stop
//	// create a Deployment, run the controller: its pods turn Running and Ready
//
// Start returns once the Node is Ready in the API server and free of
// condition taints, 50 to 100 milliseconds after it is called. It lives in
// the examples module because it needs client-go, as examples/apiserver,
// whose Join it uses, does.
//
// # What behaves as on a real node
//
// The kubelet is kubeletkit's, with upstream's semantics and names: pods
// go through ContainerCreating to Running with the conditions
// PodReadyToStartContainers, Initialized, ContainersReady and Ready (and
// PodScheduled, which the API server sets on binding); init containers,
// sidecars, restart policies, exec probes, lifecycle hooks, the
// termination grace period, CrashLoopBackOff, ErrImagePull and
// ImagePullBackOff, restart counts and last termination states, pod IPs,
// QoS classes, the events a kubelet records (Pulling, Pulled, Created,
// Started, BackOff, Killing, Unhealthy), configMap, secret, downward API and
// projected volumes, service account tokens (envtest has no default
// ServiceAccount: create the one a pod names), service environment
// variables, a Node with capacity, allocatable, conditions, addresses and
// its Lease. A deleted pod's preStop hooks run, its containers get the
// rest of the grace period, and the pod leaves the API server once its
// final status is written.
//
// # The runtime
//
// Options.Agent.Runtime nil means an embedded cri/fake runtime, on which
// any image pulls at once, a container runs until it is stopped and dies on
// SIGTERM, and the commands true and false (or sh -c "exit 0" and
// "exit 1") exit 0 or 1 after 500ms (agent.NewFakeRuntime). Node.Runtime
// returns it, to script containers (SetRules: exit codes, crashes, OOM
// kills, start failures, SIGTERM ignored), exec probes and hooks
// (SetExecRules), failing or slow pulls (SetPullBehavior) and faults of any
// CRI method (InjectFault), and to read the calls the kubelet made
// (CallsOf: the preStop hook's ExecSync, a StopContainer's timeout). Give
// Options.Agent.Runtime a *fake.Runtime of your own to start with other
// rules or images; Stop closes only the embedded one. Nothing runs: no
// processes, no network (HTTP and TCP probes and hooks dial pod IPs on
// which nothing answers: use exec probes), no resource accounting.
//
// # Timings
//
// Upstream's by default: relist 1s, pod resync 1m, a failed sync retried
// 10s later, container and image back-off 10s doubling to 5m, node status
// 10s. A crash-looping pod shows CrashLoopBackOff 12s to 30s after it
// starts, as on a real node. FastTimings divides every period by ten, for
// tests that wait for back-offs: set it as Options.Agent.Timings.
//
// # Several nodes
//
// Nodes of distinct names share one API server: each runs the pods bound
// to it, and each Binder binds the pods that fit its own node, the first
// binding of a pod winning. A test steers pods with nodeSelector, node
// affinity, taints and tolerations (Fits lists what the Binder honours).
// Options.Labels label a node at registration; for taints, create the
// Node with them before Start: the node registers on the Node it finds,
// and keeps its taints.
//
// # Threading
//
// Start starts the node's goroutines: the kubelet and its watches (pods,
// services, configMaps and secrets of its pods), its event recorder, the
// condition taints' watch and the Binder. Stop ends them and returns once
// every one has ended. NewBinder starts nothing; Binder.Run runs its two
// watches until its ctx ends and returns once they have stopped;
// BindPending does one pass in the caller's goroutine. Fits, Pending and
// ConditionTaints are pure functions. Every method is safe for concurrent
// use.
//
// # Limits
//
// The Binder is a filter, not a scheduler: it does not count resources,
// host ports, volumes, pod affinity or topology spread, does not prefer a
// node, preempts nothing, records no Scheduled or FailedScheduling event
// and leaves a pod that no node fits Pending without a PodScheduled
// condition. No node is ever marked unreachable (Ready Unknown) and no pod
// evicted by a NoExecute taint: there is no controller-manager. A stopped
// node's Node and pods stay in the API server, Ready and Running, as after
// a kubelet's crash; nothing garbage-collects them. Eviction sees a node
// whose memory and disks are not measured, so it never evicts (give
// Options.Agent.Eviction.Stats an evictiontest.Stats to script pressure).
//
// # Testing
//
// The Binder and the pure functions are tested against client-go's fake
// clientset (a reactor does what the API server does on a pods/binding).
// The tests against envtest (build tag envtest, names matching Envtest)
// need kube-apiserver and etcd in $KUBEBUILDER_ASSETS:
//
//	KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh) go test -tags envtest -race -count=1 -run Envtest ./examples/...
package envnode
