// Package allocation is a node's in-place pod resize, with the semantics
// of upstream kubelet's allocation manager (pkg/kubelet/allocation): what
// the node allocated to each pod's containers, whether it takes a resize
// the API asks, the resizes that wait for room, and the conditions and
// events that tell the pod's owner.
//
// # What it owns
//
//   - The allocation: the resources of each pod's app and init containers
//     (sidecars and regular ones: upstream's
//     InPlacePodVerticalScalingInitContainers, which the node declares,
//     status/node.DeclaredFeatures) and the pod-level resources
//     (spec.resources: upstream's InPlacePodLevelResourcesVerticalScaling,
//     declared too) as the node admitted them (SetAllocated), and the pod as
//     the node runs it (AllocatedPod: a copy with the allocated resources,
//     made only when a resize is asked; the shared pod is never written).
//   - The checkpoint (Options.CheckpointPath, upstream's
//     allocated_pods_state, CheckpointFile): read by Load, written
//     atomically when an allocation changes (Flush, RemovePod,
//     RemoveOrphanedPods), so that a restarted node runs its pods as it
//     had admitted them and weighs a resize asked meanwhile as a resize.
//   - The decision on a resize (AdmitResize, pure; Manager.AdmitResize
//     gathers its inputs): Infeasible for a static pod ("In-place resize of
//     static-pods is not supported") or for CPU or memory beyond the
//     node's allocatable ("Node didn't have enough capacity: cpu,
//     requested: 5000, capacity: 4000"); Defer when it does not fit beside
//     the other pods as allocated (admission.Fit's message); Admit
//     otherwise.
//   - The deferred resizes, retried by RetryPendingResizes in upstream's
//     order: what asks no more CPU or memory, then priority, then
//     Guaranteed, then the longest waiting.
//   - The conditions PodResizePending (reasons Deferred, Infeasible) and
//     PodResizeInProgress (reason Error when the runtime fails), with
//     upstream's times (probe time now, transition time moved by a new
//     reason), and the events ResizeStarted, ResizeCompleted,
//     ResizeDeferred, ResizeInfeasible and ResizeError with upstream's
//     messages (the containers' resources and the generation as JSON).
//
// Carrying a resize out (the pod cgroup and the containers' resources) is
// cri/podsync's; this package tells it what to apply through the allocated
// pod, and learns from the runtime, through Actuation, when it is done.
//
// # How the agent drives it
//
//	m, err := allocation.New(allocation.Options{
//		CheckpointPath: filepath.Join(rootDir, allocation.CheckpointFile),
//		Node:     allocation.NodeAllocatableFunc(nodeAllocatable),
//		Pods:     allocation.PodsFuncs{Others: otherAdmittedPods, ByUID: desiredPodNotStopping},
//		Clock:    clk, Logger: log, Recorder: recorder,
//	})
//	err = m.Load() // once, before the first admission
//
//	// Pod additions (a batch): admit the pod as allocated, record it, weigh
//	// a resize asked while the node was down.
//	allocated, _ := m.AllocatedPod(pod)
//	if admit(allocated) {
//		m.SetAllocated(allocated)
//		m.HandleResize(pod)
//	}
//	m.Flush() // one write for the batch
//
//	// Pod updates: a resize is weighed as it is asked.
//	m.HandleResize(pod)
//	m.Flush()
//
//	// Sync of a pod (its worker): run it as allocated, follow the runtime.
//	pod, _ = m.AllocatedPod(pod)
//	m.CheckResizeInProgress(pod, actuation(runtimeStatus))
//	status.Conditions = append(status.Conditions, m.Conditions(pod.UID)...)
//	... apply the resize; on the runtime's failure: m.ResizeFailed(pod, msg)
//
//	// A pod left the node, and every 3 minutes: room may have come.
//	for _, p := range m.RetryPendingResizes() { sync(p) }
//
//	// Housekeeping: forget what is gone.
//	m.RemovePod(uid)
//	m.RemoveOrphanedPods(func(uid types.UID) bool { return desiredOrKnown(uid) })
//
// The Manager keeps no timer and starts no goroutine: the caller decides
// when deferred resizes are retried (the agent counts 90 housekeeping
// passes of 2s, upstream's 3 minutes). Options.Clock only stamps the
// conditions.
//
// # Threading
//
// Every method is safe for concurrent use: the agent calls the Manager
// from its sync loop (additions, updates, removals, housekeeping) and from
// its pod workers (AllocatedPod, CheckResizeInProgress, ResizeFailed,
// Conditions). A method holds the Manager's lock only around its own
// state, and writes the checkpoint under it; Options.Node, Options.Pods
// and Options.Recorder are called without it (RemoveOrphanedPods' keep is
// the exception: it runs under the lock and must not call the Manager).
// Each step of HandleResize is atomic, not the whole: a caller that weighs
// one pod's resize from two goroutines at once gets one of the answers.
//
// # Tests
//
// The golden transcripts in testdata/ drive a Manager as the agent does,
// command by command, on a fake clock with a real checkpoint file: admit,
// resize, defer, retry, infeasible, in progress, completed, runtime error,
// restart. See TestGolden for the commands and docs/allocation.md for the
// format. Options' interfaces each have a Func adapter (PodsFuncs for the
// two methods of Pods), which makes a fake a one-liner.
package allocation
