// Package agent is the kubelet as a block: the composition of kubeletkit's
// blocks into a node agent, with every need an API server fills behind an
// interface, and one clock for all of it. examples/minikubelet is this
// package behind flags; agent/agenttest runs it on a fake clock in a unit
// test.
//
// # The flow of a pod
//
//	sources: Options.Sources.ManifestPath (syncloop/source.File),
//	Options.Sources.ManifestURL (source.URL), Options.Cluster.Updates (an
//	API server's pods, "api"), Options.Sources.Custom (the user's own,
//	each under its name, defaulted and validated as an API server would)
//	    │ merged by source.Config: ADD, UPDATE, DELETE, REMOVE, RECONCILE
//	    ▼
//	syncloop.Loop ── also wakes on probe results, the 1s sync tick (pods
//	    │            past their active deadline) and the 2s housekeeping tick
//	    ▼
//	the agent's handler (unexported), the loop's SyncHandler:
//	    HandlePodAdditions  check (cri/podsync.CheckRunnable), admit
//	                        (eviction), then the prober and the workers
//	    HandlePodUpdates, HandlePodRemoves, HandlePodReconcile,
//	    HandlePodSyncs      the pod's worker
//	    HandlePodCleanups   workers.SyncKnownPods, desired pods the workers
//	                        forgot sent again, orphans in the runtime killed,
//	                        finished pods forgotten by every block, orphaned
//	                        pod directories removed, mirror pods synced,
//	                        dead containers collected (at start, then every
//	                        minute)
//	    ▼
//	podworkers.Workers ── one serialized worker per pod; it waits for a
//	    │                 runtime status newer than its last sync (the PLEG
//	    │                 cache, or the pod inspected at once: InspectPod)
//	    ▼
//	the agent's syncer (unexported), the workers' Syncer:
//	    SyncPod             pleg cache ─► status.Generate ─► status.Manager;
//	                        pod directories; volume.Manager.WaitForMount;
//	                        cri/podsync.Syncer.SyncPod (images, sandbox, init
//	                        containers, sidecars, containers, back-off);
//	                        when it acted, the pod's status read again
//	    SyncTerminatingPod  the prober forgets the pod; podsync.KillPod
//	                        (preStop hooks, grace period); the final status
//	    SyncTerminatedPod   volumes torn down; status.Manager.TerminatePod
//	    ▼
//	status.Manager ─► Options.Cluster.StatusSink (an API server's
//	                  pods/status, or memory)
//
// Beside it: pleg (Generic, or Evented with Options.EventedPLEG) relists the
// runtime and fills the cache; a pod's events of one relist become one
// sync, handed to the pod's worker (HandlePodSyncs, through pleg's OnEvents)
// once the cache holds the status they describe, so that the worker sees
// them all in that sync; after each ContainerDied, the pod's older dead
// instances of that container, or all its dead containers once the pod is
// evicted or deleted and terminated (podworkers' ShouldPodContentBeRemoved),
// are chosen by cri/podsync.DeadContainersToRemove and removed by a
// podsync.Deletor on its own goroutine, as upstream's pod container
// deletor, rather than at the next minute's garbage collection;
// prober.Manager runs liveness,
// readiness and startup probes, whose results reach the loop (a restart)
// and the status (Ready); eviction.Manager measures the node
// (Eviction.Stats), evicts one pod per pass through the workers and refuses
// pods under pressure; cri/imagegc collects unused images; status/node
// builds the node's status and renews its lease
// (Options.Cluster.NodeStatusSink, Options.Cluster.Leases); volume.Manager
// mounts the pods' volumes from Options.Cluster.VolumeSources;
// nodeshutdown.Manager (Options.Shutdown) shuts the
// node down gracefully when its trigger or Agent.Shutdown says the machine
// is going down: NotReady, no new pods, the pods terminated in priority
// order within upstream's shutdownGracePeriod.
//
// # Driving it
//
//	a, err := agent.New(agent.Options{
//		Sources: agent.SourceOptions{ManifestPath: "manifests"},
//		HTTP:    agent.HTTPOptions{Listen: "127.0.0.1:10255"},
//		Out:     os.Stdout,
//	})
//	if err != nil { ... }
//	err = a.Run(ctx) // until ctx ends; containers are left running
//
// New starts nothing and touches no disk; Run starts every block, returns
// once they have all stopped, and leaves containers running, as a kubelet
// restart does: the next agent adopts them. Ready is closed once Run has
// started everything. PodStatuses, NodeStatus and Healthy read the agent
// while it runs (package server serves them over HTTP with
// Options.HTTP.Listen). With Options.HTTP.API the agent serves the kubelet
// API too (package server's secure server, over TLS, authenticated and
// authorized): container logs, exec, attach, port-forward, run and the
// stats summary, the agent being every node interface the server asks for.
// With APIOptions.WebSockets it serves kubectl's WebSocket protocols next to
// the runtime, and the node declares ExtendWebSocketsToKubelet so that the
// API server sends them on instead of translating them itself: the node
// declares in status.declaredFeatures exactly the features its blocks
// implement (status/node.DeclaredFeatures; Options.Node.DeclaredFeatures
// adds the caller's own). With Options.HTTP.Healthz it serves
// upstream's healthz port, what kubeadm join waits for (package server's
// Healthz: /healthz only, plain HTTP, retried every 5s while the port is
// taken).
//
// Options keeps at its top what every agent sets (Clock, Runtime,
// NodeName, RootDir, Logger ...) and groups the rest by concern: Cluster,
// Sources, Node, Cgroups, Security, HTTP, Logs, Eviction, ImageGC,
// Shutdown, Timings. Everything an API server provides comes in through
// Options.Cluster: pods (Updates), the status sink, the node's status and
// lease sinks, the Node admission matches pods against, mirror pods, an
// event recorder (client-go's record.EventRecorder fits), configMaps,
// secrets and tokens (VolumeSources), services, runtime classes. The
// module's examples/apiserver fills it with client-go (Joined.Apply), and
// examples/prometheus implements Metrics; the core depends on neither.
//
// Options.Runtime is a Runtime: versioning, sandboxes, containers and
// images, 18 methods. Exec, streaming, stats, container events and the
// runtime's status are optional capabilities the agent finds by interface
// assertion and does without, as upstream does without a CRI method the
// runtime leaves unimplemented; Runtime's doc lists what each one gives.
// cri.Dial's client and *fake.Runtime have them all (FullRuntime).
// docs/providers.md is the guide for a runtime of one's own.
//
// Time comes from Options.Clock, which every block is given: with a fake
// clock nothing the agent composes reads the real time, and
// agent/agenttest steps a whole node through minutes in milliseconds.
// Options.Timings shortens upstream's periods for demonstrations and tests
// on the real clock.
package agent
