// Package podworkers is the per-pod state machine of a node agent: it decides
// when a pod is synced, when it terminates and when it is gone, with the
// semantics of upstream kubelet's pod workers, as a value tests can drive step
// by step and a thin concurrent driver.
//
// # Lifecycle
//
// Every pod UID goes through four states:
//
//	syncing ──► terminating ──► terminated ──► finished
//	 SyncPod     SyncTerminatingPod  SyncTerminatedPod   (forgotten by SyncKnownPods)
//
// A pod is synced by Syncer.SyncPod until termination is requested: the API
// server marks it deleted, it is found in a terminal phase, SyncPod reports it
// terminal, it is killed (eviction, preemption, removal by the agent), or
// housekeeping finds it no longer desired. From then on every update is a kill:
// SyncTerminatingPod is called until it succeeds, with a grace period taken from
// deletionGracePeriodSeconds, a kill's override or
// spec.terminationGracePeriodSeconds, which can only shrink and is at least one
// second; a shorter grace period cancels the attempt in flight through its ctx.
// Then SyncTerminatedPod is called until it succeeds, and the pod is finished: a
// finished UID never runs again. Orphans known only from the runtime (a
// RunningPod update) get SyncTerminatingRuntimePod until it succeeds and are
// then forgotten.
//
// Updates for one pod are serialized and pods run in parallel. An update that
// arrives while the pod's work is in flight replaces any update still pending,
// so intermediate states are skipped. Static pods (from a file or HTTP source)
// with the same full name (name_namespace) start one at a time in the order
// they were first seen: the pod of a changed manifest (a new UID) starts after
// the old one finishes. A static pod with a fixed UID that is re-created while
// it terminates is restarted once it finished and SyncKnownPods forgot it.
//
// # Requeue
//
// After a successful SyncPod the pod is synced again after the resync interval
// (1m) plus up to 50% jitter; after a failure it is retried after the backoff
// (10s) plus jitter, or after the delay of a RetryAfter error, or, for an
// error that carries a back-off's end (BackoffExpirer: cri/podsync's
// CrashLoopBackOff), when that back-off ends, plus jitter, as upstream's
// kubelet 1.3x (MinBackoffExpiration); after a phase
// change (terminal, terminated) the next work runs at once. Before every sync
// except of a runtime-only orphan, the worker waits through StatusWaiter until
// the runtime status of the pod is newer than the end of its previous sync.
//
// The workers replay requeued pods themselves: Workers.Run looks every second
// (the sync loop tick) for pods whose time has come, in a heap, and replays the
// last update they received, as SyncPodSync. The caller does not re-send pods
// on a tick, so a deleted pod whose cleanup failed is retried even though no
// configuration names it any more.
//
// # Driving Workers
//
// The composing agent implements Syncer, builds Workers, runs them, and feeds
// them updates from its sync loop; housekeeping calls SyncKnownPods every few
// seconds and eviction calls KillPod:
//
//	w, err := podworkers.New(podworkers.Options{Syncer: syncer, StatusWaiter: waiter})
//	if err != nil { ... }
//	go w.Run(ctx) // returns when ctx ends and every worker goroutine has ended
//
//	w.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
//	known := w.SyncKnownPods(desiredPods) // housekeeping
//	err = w.KillPod(ctx, pod, podworkers.KillPodOptions{Evict: true, PodStatusFunc: markEvicted})
//
// The pleg pod cache's GetNewerThan becomes the StatusWaiter with
// StatusWaiterFunc (see StatusWaiter); the Syncer reads the status itself.
//
// # The core
//
// Machine holds all decisions: states, coalescing, grace periods, the full-name
// gate, the requeue heap. It has no goroutine, lock or clock; each method takes
// the time. Workers wraps it; a test or a custom driver can drive it directly:
//
//	m, _ := podworkers.NewMachine(podworkers.MachineOptions{})
//	m.Update(now, podworkers.UpdatePodOptions{UpdateType: podworkers.SyncPodCreate, Pod: pod})
//	for _, uid := range m.Ready() { // pods that need a worker
//		for {
//			work, ok := m.Next(now, uid) // consumes the pending update
//			if !ok {
//				break // no work left: the worker ends
//			}
//			res := call(syncer, work) // wait for status, call the Syncer method work.Kind names
//			m.Complete(now, uid, res)
//		}
//	}
//	m.Resync(now) // every tick: replay what is due, then start Ready() again
//
// Update's cancel result, and Superseded after SyncKnownPods, say when the
// work in flight for a pod must have its ctx cancelled. The golden transcripts
// in testdata/ drive a Machine this way, one step at a time.
//
// # Goroutines
//
// A worker goroutine exists only while its pod has work: Workers starts one
// when a pod with no worker gets work, and it ends when Next finds nothing
// pending. An idle node with 10,000 synced pods holds no worker goroutine, only
// the pods' state (a few hundred bytes each) and one heap entry per pod.
//
// # Threading contract
//
// All methods of Workers are safe for concurrent use and none waits for a
// sync: UpdatePod, SyncKnownPods and the predicates take one mutex for a short,
// O(1) (SyncKnownPods: O(pods)) critical section. Syncer and StatusWaiter
// methods run on worker goroutines without the mutex held, one at a time per
// UID and in parallel across UIDs; they may call Workers methods. KillPod
// blocks until the pod is terminated or its ctx ends. Run must be called once;
// updates sent before Run are kept and start when it does, and after Run
// returns no work starts. Machine is not safe for concurrent use.
//
// # Timeline
//
// When each predicate is true for a pod, with the events that move it on:
//
//	A  UpdatePod first sees the pod
//	B  termination is requested (deletion, kill, terminal phase, orphaned)
//	C  a worker takes the termination: SyncPod will not run again
//	D  SyncTerminatingPod succeeds: no container runs
//	E  SyncTerminatedPod succeeds: the pod is finished
//	F  SyncKnownPods forgets the pod, which is no longer desired
//
//	                                   unknown  unknown   A─B  B─C  C─D  D─E  E─F  after F
//	                                   (before  (after
//	                                   1st SKP) 1st SKP)
//	IsPodKnownToWorker                   no       no      yes  yes  yes  yes  yes   no
//	IsPodTerminationRequested            no       no      no   yes  yes  yes  yes   no
//	ShouldPodContainersBeTerminating     no       yes     no   no   yes  yes  yes   yes
//	CouldHaveRunningContainers           yes      no      yes  yes  yes  no   no    no
//	IsPodKnownTerminated                 no       no      no   no   no   yes  yes   no
//	ShouldPodRuntimeBeRemoved            no       yes     no   no   no   yes  yes   yes
//	ShouldPodContentBeRemoved            no       yes     no   ev   ev   del  del   yes
//	ShouldPodBeFinished                  no       yes     no   no   no   no   yes   yes
//
// "SKP" is SyncKnownPods; "ev" is yes for an evicted pod; "del" is yes for an
// evicted or deleted pod (a pod that merely completed keeps its content). When
// SyncPod reports the pod terminal, B and C coincide.
// IsPodForMirrorPodTerminatingByFullName is true from B to D for the static
// pod holding the name.
//
// # Differences from upstream
//
// Requeues are replayed by the workers (upstream hands them to the sync loop
// through a work queue and relies on housekeeping for pods no longer
// configured); a pod blocked by the full-name gate is woken as soon as the name
// is released instead of after a backoff; a pod first seen in a terminal phase
// goes through SyncTerminatingPod (upstream skips it when its cache shows
// nothing running); eviction marks a pod evicted even if it was already
// terminating; the Syncer reads the runtime status itself instead of receiving
// it. docs/podworkers.md has the details.
//
// # Fakes
//
// Package podworkers/podworkerstest has a Syncer that records calls as typed
// values, lets a test override any method and checks the order contract above,
// and a StatusWaiter. SyncerFuncs makes a one-off Syncer a literal.
//
// # Starting pods, oldest first
//
// Options.StartGate with Options.Starting bounds how many starting pods
// (pods not yet seen Running, as the caller judges) are in SyncPod at once,
// and grants the slots in admission order: without it the syncs of a burst
// (a node's start with hundreds of pods) advance in waves, every pod's
// sandbox and then every pod's container, and the first pod runs near the
// end of the burst. A Syncer gives its slot back while the pod waits for
// something other than the node (its volumes, an image pull) with
// TicketFromContext(ctx).Pause and takes it again with Resume, ahead of
// younger pods.
package podworkers
