// Package syncloop is the heart of a node agent: the loop that turns
// configuration changes, runtime events, probe results and timers into calls
// on a SyncHandler, with the semantics of upstream kubelet's syncLoop, and the
// desired pod set those calls are about.
//
// # What the loop does
//
// Loop.Run waits for one thing at a time and hands it to the handler:
//
//	config update (source.Config)  ADD → HandlePodAdditions
//	                               UPDATE, DELETE → HandlePodUpdates
//	                               REMOVE → HandlePodRemoves
//	                               RECONCILE → HandlePodReconcile
//	PLEG event                     HandlePodSyncs of the pod (not for ContainerRemoved)
//	liveness failure               HandlePodSyncs of the pod (the sync restarts the container)
//	readiness, startup result      ProbeStatus (if set), then HandlePodSyncs of the pod
//	sync tick (1s)                 HandlePodSyncs of PodsToSync(now)
//	housekeeping tick (2s)         HandlePodCleanups, once all sources are ready
//
// Events and probe results for pods the PodGetter does not know are dropped:
// the pod was removed, and housekeeping deals with what is left of it. A SET
// never reaches the loop: source.Config turns each source's complete lists
// into the incremental operations above. While RuntimeHealthy reports an
// error the loop handles nothing, and checks again after 100ms, doubling up
// to 5s, as upstream does. Run ends with nil when the Updates channel is
// closed and with ctx.Err() when ctx ends.
//
// # Threading
//
// The handler is called from the loop's goroutine only, one call at a time,
// so it needs no locking against the loop; but a call that blocks stalls
// every pod. Healthy reports an iteration that has run for longer than
// UnhealthyAfter (5m), as upstream's syncloop health check does. A handler
// hands long work to pod workers (package podworkers) and returns.
//
// # The desired pod set
//
// PodSet is upstream's pod manager: the pods the configuration asks for, by
// UID and by full name ("name_namespace"), safe for concurrent use. Mirror
// pods (the API server's copies of static pods, marked with the
// kubernetes.io/config.mirror annotation) are kept apart and reachable from
// their static pod by full name. The handler keeps the set up to date in its
// Handle* methods; the loop only reads it.
//
// # Sources
//
// Package syncloop/source reads pods from a manifest directory and a URL,
// accepts them from an API-server adapter, applies upstream's defaults to
// static pods, and merges everything into the Updates channel.
//
// # Testing
//
// Every input of the loop is a channel or a func, and time comes from
// Options.Clock, so a test drives the loop with a fake clock and a recording
// handler (see loop_test.go); package agent is a complete handler
// (agent/handler.go).
package syncloop
