// Package prober runs the liveness, readiness and startup probes of a node's
// containers and keeps their results.
//
// # Pieces
//
//   - ProbeRunner runs one probe once. Runner is the real one: exec through
//     the CRI's ExecSync (any Execer: *cri.Client, *fake.Runtime), HTTP GET,
//     TCP connect and the gRPC health check (grpc.health.v1). Each run is
//     bounded by the probe's timeout (default 1s); HTTP bodies and exec
//     output are kept to MaxOutput (10 KiB); a named port the container does
//     not declare is a Failure that says so. An HTTP redirect to another host
//     is not followed and counts as Success with a warning, as upstream.
//   - ResultsManager caches one probe type's latest result per bare CRI
//     container ID and publishes every change on Updates().
//   - Manager schedules every registered probe from one timer heap driven by
//     the injected clock and runs the probes on a bounded pool
//     (Options.Workers, default 32): no goroutine per probe, and none
//     waiting idle: one per probe running.
//
// # Driving it
//
//	m, err := prober.New(prober.Options{Runner: prober.NewRunner(prober.RunnerOptions{Execer: rt}), Status: statusManager})
//	go m.Run(ctx)                      // returns once every goroutine ended
//	m.AddPod(pod)                      // when the pod is admitted
//	select {                           // in the sync loop
//	case u := <-m.Liveness().Updates(): // Failure: kill and restart u.ContainerID
//	case u := <-m.Readiness().Updates(): // re-generate the pod's status
//	case u := <-m.Startup().Updates():
//	}
//	m.UpdatePodStatus(pod, &status)    // while generating a status: Ready and Started
//	m.RemovePod(pod) / m.CleanupPods(desired)
//
// # Semantics (upstream kubelet's)
//
// A worker per (pod, container, probe type) is registered by AddPod for
// regular containers and restartable init containers (sidecars). Its first
// turn comes after a random jitter in [0, period) so that pods added together
// do not probe together; then every PeriodSeconds (default 10s). On each turn
// the worker reads the pod's status from the StatusProvider:
//
//   - a new container ID resets it: the old container's result is removed and
//     the new one starts at Failure (readiness: not ready until a success),
//     Success (liveness) or Unknown (startup);
//   - a container that is not running gets Failure;
//   - liveness and readiness do not run until the startup probe succeeded;
//     the startup probe stops running once it did;
//   - no probe runs before InitialDelaySeconds since the container started;
//   - a result is published after SuccessThreshold (default 1) or
//     FailureThreshold (default 3) consecutive equal results; a published
//     liveness or startup Failure puts the worker on hold until the container
//     restarts (gets a new ID);
//   - a probe that could not run (an error, not a Failure) is discarded.
//
// UpdatePodStatus triggers the readiness probe of a started container that
// is not ready yet: it runs at once rather than at its next period, with the
// container as the status being generated found it.
//
// Every failed run records a Warning event "Unhealthy" with the message
// "<Type> probe failed: <output>"; a passing run with a warning records
// "ProbeWarning". Killing the container is the pod sync's job.
//
// # Threading
//
// All Manager methods are safe for concurrent use. Run dispatches due
// workers to the pool; a worker is never in flight twice. ResultsManager.Set
// blocks while its Updates buffer (UpdatesBuffer) is full, so the consumer
// must keep draining; the manager's own sends give up when Run's ctx ends.
//
// # Fakes and tests
//
// ProbeRunnerFunc makes a scripted runner a one-liner; package probertest has
// a scripted, call-recording ProbeRunner and a StatusProvider. Options.Jitter
// (return 0) and Options.AfterProbe (called after each worker turn) make the
// schedule deterministic under a fake clock: step the clock once the driver
// is parked on it (FakeClock.HasWaiters) and wait for AfterProbe.
package prober
