// Package status turns what the runtime, the probes and the pod sync know
// about a pod into the v1.PodStatus that upstream kubelet would report, and
// keeps the node's statuses in a versioned cache that pushes changes to a
// Sink (the API server, or anything else).
//
// # Generating a status
//
// Generate is a pure function of an Input: the pod (whose Status is the API
// server's), the runtime's view of it (a *cri.PodStatus from the pleg
// cache), the last status generated, and three optional helpers: the
// prober's results (ProbeResults, which fills Ready and Started), the reasons
// of the last failed starts (WaitingReasons, cri/podsync's Syncer) and a
// reader of termination message files and log tails (MessageReader;
// FileMessageReader reads real files and refuses paths outside its
// directories). It follows upstream kubelet rule for rule:
//
//   - container and init container statuses: the newest runtime instance
//     is State, the one before it LastTerminationState (once the runtime
//     has collected that one, the termination and the restart count carry
//     over from the previous status, as upstream 1.36); waiting containers
//     get ContainerCreating or PodInitializing, or the reason of their last
//     failed start (CrashLoopBackOff, ErrImagePull, ...) when due to be
//     started again; a container that was running and vanished is shown
//     with a ContainerStatusUnknown termination (exit code 137); IDs are
//     "runtime://id"; terminated messages are the runtime's, followed by
//     the termination message file or, with FallbackToLogsOnError after a
//     failure, the log tail (80 lines, 2048 bytes);
//   - the phase (Phase) from init containers, sidecars (restartable init
//     containers), containers and whether each stopped one will restart
//     (podspec.RestartsAfterExit: container restart rules, the container's
//     own restartPolicy, else the pod's); a terminal phase, once in the API
//     server or generated, is never left;
//   - the conditions PodReadyToStartContainers, Initialized, Ready (with
//     readiness gates read from the pod's conditions), ContainersReady and
//     PodScheduled, with upstream's reasons and messages, each with a
//     transition time that moves only when its status changes; conditions
//     of other writers are kept;
//   - in a pod that has a RestartAllContainers rule, the condition
//     AllContainersRestarting: True from the exit that such a rule matches
//     until the runtime holds none of the pod's containers (the caller then
//     resets the pod: AllContainersRestarting, cri/podsync's ResetPod),
//     the removed containers waiting as RestartingAllContainers with one
//     more restart;
//   - pod IPs (one per family, the node's family first), host IPs (a
//     host-network pod takes the node's), start time and QoS class.
//
// A container that will not run again after its exit (restart policy Never,
// or OnFailure after a success, the container's own or the pod's, and no
// rule of its restartPolicyRules restarting on that exit code) is never
// reported running again: Generate keeps its terminated status, and
// Manager.Set refuses such a status (ErrIllegalTransition), as upstream's
// status manager does.
//
// # The status Manager
//
// A Manager caches one status per pod with a version. Set (usually with
// Generate's result), SetContainerReadiness, SetContainerStartup and
// TerminatePod change it; a status equal to the cached one in everything the
// node writes is not a change. Run pushes each change promptly through a
// Sink, with a few workers (4), each push bounded by a timeout (10s on the
// injected clock); a failed push is retried after a backoff (500ms doubling
// to 10s) kept per pod in the Manager's queue, with no goroutine per pod, so
// a failing or hanging pod never holds up the others. Every 10s a resync
// queues every pod whose newest version was not pushed, and, given a
// PodGetter, every pod whose status in the agent's pod cache differs from
// the one pushed (checked once per resourceVersion, outside the lock).
//
// A push reads the pod from the sink, merges (the conditions of other
// writers are kept, a terminal phase is held back while containers may
// still run, Ready is forced False in a terminal phase), writes only when
// the merged status differs from the sink's, and, for a pod whose deletion
// was requested, once it is terminal and its containers are gone
// (TerminatePod, or PodDeletionSafety says so), asks the sink to delete it
// (with the API server: grace period 0 and a UID precondition) and forgets
// it. A static pod's status goes to its mirror pod, which the sink finds by
// name and which is never deleted here.
//
//	m, err := status.New(status.Options{Sink: sink, DeletionSafety: workers})
//	if err != nil { ... }
//	go m.Run(ctx) // returns when ctx ends, after its goroutines
//
//	// in SyncPod:
//	old, _ := m.GetPodStatus(pod.UID)
//	st, err := status.Generate(status.Input{Pod: pod, Runtime: rs, Old: &old, ...})
//	if err == nil { err = m.Set(pod, st) }
//	// in SyncTerminatedPod:
//	m.TerminatePod(pod)
//
// # Threading
//
// Generate is safe for concurrent use. The Manager's methods are safe for
// concurrent use and never block on the sink; Run may be called once. The
// Sink's methods are called concurrently for different pods, never for the
// same pod at once.
//
// # Fakes
//
// Package statustest has a Sink that holds pods like an API server, records
// calls, and can fail, hang and hold back writes to release them in any
// order.
package status
