// Package eviction is the kubelet's node-pressure eviction: it watches the
// node's memory, disks and PIDs, reports MemoryPressure, DiskPressure and
// PIDPressure, frees node-level resources, and evicts pods when that is not
// enough, with upstream kubelet's semantics (pkg/kubelet/eviction).
//
// # Pieces
//
//   - Threshold, ParseThresholds (the --eviction-hard, --eviction-soft,
//     --eviction-soft-grace-period and --eviction-minimum-reclaim syntax)
//     and DefaultHardThresholds (memory.available<100Mi,
//     nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%).
//   - Observe turns a stats.Summary into signal Observations;
//     Threshold.IsMet compares one threshold (with or without its minimum
//     reclaim).
//   - RankMemoryPressure, RankDiskPressure, RankPIDPressure and RankFor
//     order pods for eviction; LocalStorageViolation checks a pod's local
//     storage limits; podspec.IsCritical says which pods are never evicted.
//   - Machine holds every decision of a pass (Decide, Reclaimed) and the
//     bookkeeping between passes, with no goroutine, clock, lock or I/O;
//     Admit(conditions, pod) is the admission rule under pressure.
//   - Manager is the executor around a Machine: Synchronize is one pass
//     (measure, decide, then kill, collect garbage, log and record
//     events), Run repeats it every MonitoringInterval, Manager.Admit is
//     the admission check under the current pressure, and
//     IsUnderMemoryPressure / IsUnderDiskPressure / IsUnderPIDPressure
//     feed status/node.Pressure.
//
// # Driving it
//
//	m, err := eviction.New(eviction.Options{
//		Thresholds: eviction.DefaultHardThresholds(),
//		Stats:      statsProvider,           // stats.NewLinux(...) or evictiontest.Stats
//		Pods:       activePods,              // admitted, not yet terminated
//		Killer:     killer,                  // the pod workers' synchronous kill
//		ImageGC:    imageGC, ContainerGC: containerGC, // optional
//		Recorder:   recorder,                // optional: Evicted events
//	})
//	go m.Run(ctx)                       // returns once ctx ends
//	ok, reason, msg := m.Admit(pod)     // in pod admission
//	node.Options{Pressure: m}           // status/node conditions
//
// # One pass (Synchronize), as upstream
//
//  1. Measure, derive the signals, and find the thresholds met; a
//     threshold met before stays met until its minimum reclaim is
//     available again.
//  2. A pressure condition is true while a threshold of its signal was met
//     within the last PressureTransitionPeriod (5m), so it does not flap.
//  3. A soft threshold acts only once it has been met for its grace period;
//     a hard one at once. Thresholds whose stats are no newer than last
//     pass's do not act.
//  4. Pods over their local storage limits (emptyDir sizeLimit, pod or
//     container ephemeral-storage limits) are evicted at once, with no grace
//     period; if any was, the pass ends.
//  5. Of the thresholds that act, memory comes first. For a disk signal the
//     manager first deletes dead containers and unused images (with a
//     dedicated image filesystem, only containers for nodefs), measures
//     again and stops if no threshold is met any more.
//  6. The active pods are ranked for the signal and the first that is not
//     critical is evicted, one pod per pass: an Evicted Warning event, then
//     a kill with grace 1s (hard) or min(MaxPodGracePeriodSeconds, the
//     pod's own) (soft), and the status phase Failed, reason Evicted, the
//     message "The node was low on resource: memory. Threshold quantity:
//     100Mi, available: 50Mi. Container c was using 1Gi, request is 0, has
//     larger consumption of memory. " and a DisruptionTarget condition.
//
// # Driving the Machine yourself
//
// A caller that wants its own loop (its own killer, reclaim or schedule),
// or a test that wants to step through passes, drives a Machine. One pass
// is Decide, carrying out what it returns, and, when it asks for node-level
// reclaim, Reclaimed with the node measured once more:
//
//	m, err := eviction.NewMachine(eviction.MachineOptions{
//		Thresholds:  thresholds,
//		ContainerGC: true, ImageGC: true, // what this caller can collect
//	})
//	for { // every 10s
//		s, err := provider.Get(ctx)
//		if err != nil { ... }
//		d := m.Decide(eviction.NewInput(clk.Now(), s, activePods()))
//		publish(d.Conditions) // node status; eviction.Admit(d.Conditions, pod) at admission
//		evictions := d.Evictions
//		if d.Reclaim.Any() {
//			if d.Reclaim.Containers { deleteDeadContainers(ctx) }
//			if d.Reclaim.Images { deleteUnusedImages(ctx) }
//			var after eviction.Observations // nil: not measured, pressure remains
//			if s, err := provider.Get(ctx); err == nil {
//				after = eviction.Observe(s)
//			}
//			evictions, _ = m.Reclaimed(after) // relieved: nothing to evict
//		}
//		for _, e := range evictions {
//			kill(ctx, e.Pod, e.Status(clk.Now()), e.GracePeriodSeconds)
//		}
//	}
//
// Decide's Evictions are either the pods over their local storage limits
// (the pass ends there) or, when no reclaim comes first, the one pod ranked
// first for the pass's first acting threshold. The Decision also says which
// thresholds are met and since when, which act, and for which resource.
// Manager.Synchronize is exactly this loop's body, with logs, events and
// OnEvict. The transcripts in testdata/decide/ drive a Machine this way.
//
// # Threading
//
// Synchronize calls are serialized; Admit, NodeConditions and the
// IsUnder* methods may be called from any goroutine at any time. A Machine
// is not safe for concurrent use: one goroutine drives it (the Manager's,
// under its pass lock). Run starts
// no goroutine: it runs passes in the caller's goroutine and returns nil
// when ctx ends. Options.Killer is called from the goroutine running the
// pass and should block until the pod is killed.
//
// # Fakes
//
// evictiontest has a settable stats provider, a recording pod killer and a
// recording garbage collector. stats.Linux measures a real node. The golden
// transcripts in testdata/ show whole scenarios pass by pass through a
// Manager; those in testdata/decide/ through a Machine, decision by
// decision.
package eviction
