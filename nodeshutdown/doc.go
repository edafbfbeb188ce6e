// Package nodeshutdown is the kubelet's graceful node shutdown, with
// upstream's semantics (pkg/kubelet/nodeshutdown, the kubelet's
// shutdownGracePeriod, shutdownGracePeriodCriticalPods and
// shutdownGracePeriodByPodPriority): when the machine is about to shut
// down, the node stops admitting pods, reports NotReady, and terminates its
// pods in priority order within a time budget.
//
// # What a shutdown does
//
// Groups turns the options into priority groups: by default two,
// ordinary pods (priority 0 and up) with GracePeriod less
// GracePeriodCriticalPods, and critical pods (priority 2000000000 and up,
// system-cluster-critical and system-node-critical) with
// GracePeriodCriticalPods. Plan puts each pod in the group of the highest
// priority not above its spec.priority. Manager.Shutdown then, for each
// group from the lowest priority up, asks the Killer to terminate all its
// pods at once, each with the group's grace period or its own
// terminationGracePeriodSeconds where that is shorter, and waits until they
// have stopped (and their volumes are torn down, with an Unmounter) or the
// group's grace period has passed, before the next group. Each pod's final
// status is upstream's: phase Failed, reason Terminated, message "Pod was
// terminated in response to imminent node shutdown.", and a
// DisruptionTarget condition with reason TerminationByKubelet
// (SetTerminatedStatus); a pod whose containers all exited 0 on SIGTERM
// ends Succeeded, with the condition only, as upstream's.
//
// From the start of the shutdown until Cancel, ShutdownStatus returns
// ErrShuttingDown ("node is shutting down", the message of the node's Ready
// condition, False with reason KubeletNotReady) and Admit refuses every pod
// with reason NodeShutdown, "Pod was rejected as the node is shutting
// down.". The node gets a Normal event Shutdown, "Shutdown manager detected
// shutdown event" (and "... shutdown cancellation" on Cancel). Done is
// closed once a shutdown has finished: the machine may go on.
//
// # Triggers
//
// What starts a shutdown is a Trigger, run by the caller. Package
// nodeshutdown/logind is upstream's: systemd-logind's PrepareForShutdown,
// with a delay inhibitor lock held until the pods are down. Signal begins
// a shutdown on a signal (for machines without systemd, or a shutdown
// script); a program may also call Manager.Shutdown itself.
//
// # Driving it
//
//	m, err := nodeshutdown.New(nodeshutdown.Options{
//		GracePeriod:             30 * time.Second,
//		GracePeriodCriticalPods: 10 * time.Second,
//		Pods:                    activePods,  // admitted, not terminal, not terminating
//		Killer:                  killer,      // the pod workers' synchronous kill
//	})
//	chain = append(chain, admission.PodHandlerFunc(m.Admit))
//	go (&nodeshutdown.Signal{Signals: []os.Signal{syscall.SIGTERM}}).Run(ctx, m)
//
// Package agent does all this with agent.Options.Shutdown.
//
// # Threading
//
// Manager's methods are safe for concurrent use. Shutdown blocks the
// caller for the shutdown's length and returns only after every goroutine
// it started has ended; a second Shutdown while one is under way waits for
// it. New starts no goroutine. Time comes from Options.Clock.
package nodeshutdown
