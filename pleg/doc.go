// Package pleg is the pod lifecycle event generator: how a kubelet learns what
// the container runtime did. It watches the runtime's sandboxes and
// containers, keeps the runtime status of every pod in a Cache, and tells the
// sync loop which pods changed, as a stream of Events.
//
// # Two generators
//
// Generic relists: every RelistPeriod (1s) it lists all sandboxes and
// containers, diffs them against what it delivered before, inspects the pods
// that changed (up to Parallelism, 8, at a time; upstream inspects one at a
// time, which is why its relists take minutes at a few hundred busy pods),
// writes their statuses to the Cache stamped with the time the relist started,
// queues their events, and then advances the Cache's global timestamp. A pod
// whose inspection fails gets the error in the Cache (so a waiting worker sees
// it) and is inspected again on the next relist, and its events are held back
// until then; since the diff is against what was delivered, not against the
// last relist, nothing is missed meanwhile.
//
// Evented follows the runtime's container events (CRI GetContainerEvents)
// and relists every 300s as a safety net, and at once whenever the stream
// fails or comes back. After MaxStreamFailures (5) consecutive failures it
// falls back to relisting every second, says so in the log and through
// Metrics.StreamState, and keeps trying the stream; when a stream works again,
// events resume. Statuses from events are stamped with the event's time, and
// the Cache keeps only the newest status per pod, so a late or repeated event
// never makes a pod look older than it is.
//
// Both produce the same Event types as upstream: ContainerStarted,
// ContainerDied, ContainerRemoved, PodSync (and ContainerChanged, which the
// diff uses internally and neither delivers), each naming the pod and the
// container or sandbox.
//
// # No event is lost
//
// Events is an unbuffered channel owned by the generator, fed from a queue per
// pod. A producer never blocks and never drops: when the consumer falls
// behind, a pod's pending events accumulate (a duplicate of a pending event is
// absorbed) and, past 16 pending events, collapse into a single PodSync for
// the pod, which absorbs everything that follows until it is delivered. A
// consumer that handles PodSync like any other event (sync the pod against
// the Cache) therefore always catches up with the runtime, and the queue holds
// at most 16 events per pod: memory is bounded by the number of pods, however
// slow the consumer. Metrics.EventsCoalesced counts what was absorbed;
// upstream dropped events instead when its 1000-slot channel was full.
//
// # Health
//
// Healthy has upstream's contract and messages: false until a relist has
// succeeded ("pleg has yet to be successful"), and when the last successful
// relist started more than the threshold (3m; 10m while Evented has events)
// ago ("pleg was last seen active 3m1s ago; threshold is 3m0s"). A relist only
// counts once it has finished, so one stuck in the runtime cannot hide its
// age: the message then also says how long it has been running, and
// Metrics.LastSeen is reported on every health check, so the stuck relist shows
// as a last-seen time that stops moving (upstream #87108). Every list call and
// every pod's inspection is bounded by RuntimeTimeout (2m) on the injected
// clock, so a hung runtime call delays a relist but cannot stop it forever.
//
// # Driving it
//
// A sync loop takes events and syncs pods; a pod worker waits for a status
// newer than its last sync before syncing again:
//
//	p, err := pleg.NewGeneric(pleg.GenericOptions{Runtime: rt, Logger: log})
//	if err != nil { ... }
//	go p.Run(ctx) // returns when ctx ends, after its goroutines
//
//	for {
//		select {
//		case ev, ok := <-p.Events():
//			if !ok {
//				return // the PLEG stopped
//			}
//			if ev.Type == pleg.ContainerRemoved {
//				continue // nothing to sync
//			}
//			workers.Sync(ev.PodUID) // PodSync included
//		case <-housekeeping.C:
//			if ok, err := p.Healthy(); !ok {
//				log.Warn("skipping pod sync", "err", err)
//			}
//		}
//	}
//
//	// in the pod worker:
//	status, err := p.Cache().GetNewerThan(ctx, uid, lastSync)
//
// GetNewerThan returns once the Cache holds a status of the pod stamped after
// lastSync, or a relist finished after it; unlike upstream's, it ends with
// ctx. With Evented, a wait also makes the PLEG inspect the pod (at once and
// every CacheRefreshPeriod, 2s), where upstream bumped the global timestamp to
// "now" every 2s and could hand the worker a status that predated events
// still in flight.
//
// # The cache before the events
//
// Both PLEGs write a pod's status (or its removal) to the Cache before they
// hand over the events that describe it, on the channel or to OnEvents, and
// advance the global timestamp only after the relist has written every pod
// (upstream's order). So a pod worker woken by an event finds in the Cache
// a status at least as new as the relist, or the container event, that
// produced it: the wait for a status newer than its last sync, which the
// previous relist's global timestamp may already satisfy, never lets it sync
// on the state before the event (a container it would believe still running
// until its next resync, a minute later).
//
// A consumer that hands events to pod workers can take them through
// OnEvents (GenericOptions, EventedOptions) instead of the channel: a pod's
// events of one relist in one synchronous call, after the cache holds the
// status they describe. A relist then costs one sync per pod, where events
// taken one at a time can reach a worker already syncing for the first and
// cost a second sync a relist later. Package agent does so.
//
// # Threading
//
// NewGeneric and NewEvented start nothing. Run starts the goroutines and
// returns after all of them have ended, closing Events. Relist may be called
// at any time (relists never overlap); Healthy, Events and Cache are safe for
// concurrent use. Time comes from the injected clock (k8s.io/utils/clock; the
// tests use its fake), logs go to an *slog.Logger, measurements to the
// optional Metrics.
//
// # Testing with it
//
// Package cri/fake is an in-memory runtime that satisfies both Runtime and
// EventedRuntime, with a clock of its own to inject, scripted containers and
// faults per method; this package's scenario tests run against it.
package pleg
