// Package vkprovider is a virtual-kubelet provider built on package agent:
// VK's node.PodLifecycleHandler and node.PodNotifier (asynchronous
// statuses), node.NodeProvider and nodeutil.Provider, over a whole
// kubeletkit kubelet. A provider author brings a CRI-shaped backend (an
// agent.Runtime: containerd or CRI-O through cri.Dial, the in-process
// cri/fake, or a shim of their own) instead of re-implementing probes,
// restart policies, CrashLoopBackOff, init containers, volumes, service
// account tokens and graceful termination.
//
// # What the backend implements
//
// A shim implements agent.Runtime's 18 methods: Version, the five sandbox
// methods, the eight container methods and the four image methods. The
// rest are optional, found by interface assertion, and the node does
// without each one it leaves out:
//
//	cri.Execer          exec probes and hooks, /run (without: they error)
//	cri.Streamer        kubectl exec, attach, port-forward (without: an error
//	                    saying the runtime does not support them)
//	cri.StatsProvider   pods in the stats summary and eviction's pod usage
//	cri.ImageFSInfoer   the image filesystem's usage
//	cri.EventSource     EventedPLEG (without: the PLEG relists)
//	cri.StatusReporter  runtime conditions (without: ready, network ready)
//
// Leave an optional method out rather than return an error from it: there
// is no base type to embed, since one would make every capability look
// present. docs/providers.md says what each required method must do and
// how pods map onto a backend that is not a container runtime.
//
// # Who owns what
//
//	virtual-kubelet (github.com/virtual-kubelet/virtual-kubelet)
//	    the pod informer (pods bound to the node), the calls CreatePod,
//	    UpdatePod, DeletePod; writing pods' statuses (UpdateStatus) and
//	    deleting pods from the API server; registering the Node, patching
//	    its status, renewing its Lease; the kubelet API's HTTP server
//	    (nodeutil.AttachProviderRoutes), its TLS and authentication
//	kubeletkit (package agent, through this package)
//	    admission (OS, sysctls, AppArmor, eviction), images and pull
//	    back-off, sandboxes, init containers and sidecars, restart policy
//	    and CrashLoopBackOff, probes, volumes (emptyDir, hostPath,
//	    configMap, secret, downwardAPI, projected tokens, image volumes,
//	    inline CSI volumes of drivers that register in the agent's
//	    RootDir/plugins_registry; no persistentVolumeClaim: such a pod
//	    waits with FailedMount, and no CSINode is written), environment
//	    (configMaps, secrets, services, the downward API), graceful
//	    termination with preStop hooks, eviction, image and container
//	    garbage collection, every status field and reason as upstream
//	    kubelet writes it, the node's capacity, conditions, addresses and
//	    node info, the logs, exec, attach, port-forward and stats behind
//	    the kubelet API
//
// # Running it under VK
//
//	var p *vkprovider.Provider
//	n, err := nodeutil.NewNode(name, vkprovider.NewProviderFunc(vkprovider.Options{
//		Agent:  agent.Options{Runtime: rt, RootDir: "/var/lib/vk"}, // rt: cri.Dial's client; nil: the embedded fake
//		Client: client, // the node's credentials: volume sources, services, events
//	}, func(b *vkprovider.Provider) { p = b }),
//		nodeutil.WithClient(client),
//		func(c *nodeutil.NodeConfig) error { c.SkipDownwardAPIResolution = true; return nil })
//	// run p.Run(ctx) and n.Run(ctx) side by side; examples/vknode does
//
// Set SkipDownwardAPIResolution: otherwise VK resolves environment
// variables itself before CreatePod, from its own informers, and a
// missing configMap or secret becomes VK's ProviderFailed instead of the
// kubelet's CreateContainerConfigError. examples/vknode is such a node
// behind flags.
//
// # Pods in
//
// CreatePod, UpdatePod and DeletePod only touch an in-memory store and wake
// a goroutine of Run's, which sends the agent the complete desired set as a
// syncloop.OpSet of source "api", as examples/apiserver's PodSource does
// from an informer: the agent's merger turns it into ADD, UPDATE, DELETE
// and REMOVE. They never wait for the agent, and never fail for a pod the
// agent then refuses or cannot run: that pod gets a status saying why
// (Failed with the admission's reason, ErrImagePull, CreateContainerConfigError,
// ...), as under upstream kubelet. DeletePod with VK's deletion timestamp
// terminates the pod gracefully; VK's later DeletePod, once the pod left
// the API server, takes it out of the set (see DeletePod). With
// Options.Pods (VK's pod lister), the first set waits until VK has handed
// over the pods its informer lists, so that a restarted node adopts their
// containers instead of killing them.
//
// # Statuses out
//
// The agent's status.Sink is the provider's store: the status manager
// reads the stored pod (GetPod), writes a status (UpdatePodStatus: stored, then
// queued for VK) and, for a deleted pod that finished, deletes it
// (DeletePod: with Options.Client the pod is deleted from the API server
// with grace period 0 and a UID precondition, as upstream does, and leaves
// the set). The queue between the status manager and VK's NotifyPods
// callback keeps the latest status of each pod and runs up to four
// callbacks at once, one per pod at most: a callback that blocks holds
// back its pod and one of the four, never the agent. GetPod, GetPodStatus and GetPods answer from the store, with the
// status last written; a pod the provider does not hold is NotFound
// (errdefs.IsNotFound, and errors.Is ErrPodNotFound).
//
// # The node
//
// The agent's node.StatusSink is the provider's too: every node status the
// agent builds (capacity, allocatable, Ready and the pressure conditions,
// addresses, node info, images) is merged into the Node VK gave
// (MergeNodeStatus) and handed to NotifyNodeStatus's callback, which VK
// patches into the API server. Ping is the agent's health (agent.Healthy);
// VK registers the Node after the first successful ping, and stops posting
// the status and renewing the Lease while pings fail. Leases are VK's: the
// agent gets none.
//
// Admission matches pods' nodeSelector, node affinity and the NoExecute
// taints they must tolerate against a Node. With Options.Client (and no
// Agent.Cluster.Node of the caller's), it is the Node as the API server
// has it: Run watches that Node alone (examples/apiserver's NodeWatcher,
// a field selector on its name), as upstream kubelet admits against its
// node informer's copy, so that labels and taints others set on the Node
// count as soon as the server has them (upstream's cluster suite labels
// a node and at once creates pods that select the label). Its labels are
// those VK registered and others added: register the default ones
// (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch), as
// examples/vknode does, or pods that select them are refused. Without a
// client, and until the watch has read the Node, the agent admits against
// its own Node: its name, the default labels and Agent.Node.Labels, no
// taints.
//
// # The kubelet API
//
// nodeutil.Provider's methods go to the agent: GetContainerLogs to
// agent.ContainerLogs (VK's log options become a v1.PodLogOptions,
// streamed through a pipe); RunInContainer and AttachToContainer to
// agent.Exec and agent.Attach, whose streaming URL the provider talks to
// as kubectl would (client-go's SPDY remotecommand executor, terminal
// resizes from VK); PortForward to agent.PortForward and a client-go SPDY
// connection with the port-forward streams; GetStatsSummary to
// agent.Summary; GetMetricsResource to examples/prometheus's
// ResourceCollector over the agent's summary. With the embedded fake
// runtime, Run serves its streaming sessions on a loopback port.
//
// # Threading
//
// New starts nothing. Run runs the agent, the pod feed, the status and
// node notifiers and, with a client, the API server's volume sources and
// services and the watch of the Node, until ctx ends, and returns once every goroutine it started
// and every request's stream has ended. Every method is safe for
// concurrent use and callable before Run; VK's callbacks are called from
// Run's goroutines only.
//
// # Where statuses differ from upstream kubelet's under VK
//
//   - VK writes a pod's whole status (UpdateStatus), not a patch, and
//     calls UpdatePod only for spec, label and annotation changes, never
//     for a status another writer changed. With Options.Pods (which
//     NewProviderFunc sets) the provider makes up for both: the conditions
//     other writers set in the API server are kept in the statuses the
//     agent writes, and the conditions of readiness gates are read from
//     VK's informer every GatePoll, so that a gate turns the pod Ready; a
//     condition changed between the informer's view and VK's write is
//     still overwritten. Without Options.Pods, readiness gates never turn
//     a pod Ready and other writers' conditions are overwritten.
//   - A pod marked for deletion whose containers are all waiting or
//     terminated (Pending, CrashLoopBackOff) is force-deleted by VK
//     without a DeletePod: the agent learns of it once it left the API
//     server, and kills what runs without waiting for its grace period.
//   - Without Options.Client, a finished deleted pod stays in the API
//     server until its grace period ends, when VK deletes it; upstream
//     deletes it as soon as its containers stopped.
//   - VK force-deletes a pod from the API server when its grace period
//     (counted from DeletePod) ends, whether or not its containers have
//     stopped; upstream leaves it there until they have, the 2s it grants
//     after a preStop hook that used up the grace period included.
//   - VK's pod controller ignores pods whose phase in the API server is
//     Succeeded or Failed: no status is written to them any more.
//   - Static pods (Agent.Sources.ManifestPath) run, but their statuses reach no
//     mirror pod: VK knows no static pods.
//
// # Without a CRI-shaped backend
//
// A provider whose backend does not look like the CRI can still take the
// blocks one at a time: podworkers for one serialized worker per pod with
// upstream's termination and grace periods, prober for the probes, status
// for a versioned cache of statuses pushed to a Sink (VK's NotifyPods).
// The package's Example_withoutCRI runs this sketch:
//
//	statuses, _ := status.New(status.Options{Sink: sink}) // sink: GetPod, UpdatePodStatus → VK's callback
//	probes, _ := prober.New(prober.Options{Runner: prober.NewRunner(prober.RunnerOptions{Execer: be}), Status: statuses})
//	workers, _ := podworkers.New(podworkers.Options{
//		Syncer: podworkers.SyncerFuncs{
//			SyncPodFunc: func(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
//				st, err := be.Ensure(ctx, pod) // start what is missing, report the pod's status
//				if err != nil {
//					return false, err // retried after a back-off
//				}
//				probes.UpdatePodStatus(pod, &st) // Ready and Started from the probes
//				return st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed, statuses.Set(pod, st)
//			},
//			SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, grace int64, _ podworkers.PodStatusFunc) error {
//				return be.Stop(ctx, pod, time.Duration(grace)*time.Second)
//			},
//			SyncTerminatedPodFunc: func(_ context.Context, pod *v1.Pod) error { statuses.TerminatePod(pod); return nil },
//		},
//		StatusWaiter: podworkers.StatusWaiterFunc(func(context.Context, types.UID, time.Time) error { return nil }),
//	})
//	// go statuses.Run(ctx); go probes.Run(ctx); go workers.Run(ctx)
//	// CreatePod:  probes.AddPod(pod); workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
//	// DeletePod:  workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodUpdate, Pod: pod}) // with its deletion timestamp
//	// probes.Liveness().Updates(): a Failure asks the backend to restart that container
//
// (be is the provider's backend: Ensure, Stop, and ExecSync for exec
// probes.) What the agent adds on top (the PLEG, status.Generate from CRI
// statuses, podsync's restart policy and back-offs, volumes) needs the CRI
// shape.
//
// # Tests
//
// The package's tests drive a Provider as VK's pod controller does, on the
// agent's embedded fake runtime and the real clock, and run VK's own
// nodeutil.NewNode with it against client-go's fake clientset.
package vkprovider
