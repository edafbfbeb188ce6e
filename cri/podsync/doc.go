// Package podsync is the runtime half of a kubelet (upstream's kuberuntime
// manager): given a pod and the runtime's view of it, it decides what to
// create, start, kill and restart, and does it through the CRI.
//
// # The core and the driver
//
// ComputeActions is a pure function: it compares a *v1.Pod with the
// *cri.PodStatus the runtime reports (from cri.GetPodStatus or the pleg
// cache) and returns the plan, an Actions value: kill the pod, create a new
// sandbox (none ready, more than one ready, network mode changed, no IP
// where one is needed), containers to kill with a reason (spec hash
// changed, liveness or startup probe failed, not in the spec), the next
// init container, the sidecars (restartable init containers) to start and
// the app containers to start, under each container's restart decision
// (podspec.RestartsAfterExit: the container's restartPolicyRules on its exit
// code, then its own restartPolicy, then the pod's: Always, OnFailure,
// Never). When nothing is to be done it allocates nothing.
//
// A pod whose status says AllContainersRestarting (a container exited with
// a code one of its RestartAllContainers rules matches: package status) is
// reset instead: ComputeResetActions plans the kill without grace and the
// removal of every instance of its init and app containers, the cause
// last, and ResetPod performs it; the next SyncPod starts the pod over from
// its first init container in the same sandbox.
//
// A Syncer performs plans:
//
//	s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Recorder: rec})
//	...
//	st, err := cri.GetPodStatus(ctx, rt, pod.UID, pod.Name, pod.Namespace)
//	res := s.SyncPod(ctx, pod, st)   // one StepResult per step
//	...
//	res = s.KillPod(ctx, pod, st, nil) // preStop hooks, apps, then sidecars, then sandboxes
//	err = s.GarbageCollect(ctx, podsync.GCPolicy{MaxPerPodContainer: 1, MaxContainers: -1}, podExists)
//
// Dead containers go two ways. GarbageCollect, every minute, enforces a
// GCPolicy over the whole node and removes what pods no longer known left.
// Between its passes, when a container dies, DeadContainersToRemove (a pure
// function of the pod's cached status, upstream's pod container deletor)
// chooses the exited instances of that container beyond the newest, or,
// once the pod's content may be removed (evicted, or deleted and
// terminated), every exited container of the pod; a Deletor removes them
// off the caller's goroutine through RemoveDeadContainer:
//
//	d, err := podsync.NewDeletor(podsync.DeletorOptions{Remover: s, Logger: log})
//	go d.Run(ctx)
//	// on each ContainerDied event of pod uid:
//	d.Enqueue(podsync.DeadContainersToRemove(cachedStatus, ev.ContainerID, 1, workers.ShouldPodContentBeRemoved(uid))...)
//
// SyncPod pulls images by pull policy (Always, IfNotPresent, Never; the
// default from the tag as the API server defaults it), with the matching
// credentials of the pod's imagePullSecrets (PullAuths), with a backoff per
// image (ErrImagePull, then ImagePullBackOff; ErrImageNeverPull; an image
// reference that does not parse is InvalidImageName), creates
// the sandbox (hostname, DNS, port mappings, host namespaces, labels and
// annotations), runs init containers one at a time, keeps sidecars running,
// starts app containers (running each one's postStart hook before the
// next: a failed hook kills the container, which then waits as
// PostStartHookError), and holds each crashing container in
// CrashLoopBackOff: restarted at once the first time, then after 10s, 20s,
// 40s ... up to 5m, starting over once a container ran for 10 minutes.
//
// The sandbox's and each container's CRI config come from a
// containerconfig.Builder, which New builds from Options.Config and Config
// returns: command, args and environment (configMaps, secrets, services,
// the downward API, $(VAR) expansion), mounts, DNS and /etc/hosts,
// resources, the whole security context (seccomp, AppArmor, SELinux, user
// namespaces, runAsNonRoot), devices, and the log path
// <container>/<restartCount>.log under the pod's log directory (under
// Options.Config.LogRoot). The Syncer decides when a config is built and
// what its failure means: a container whose config cannot be built waits
// in CreateContainerConfigError (with the error's StatusMessage where it
// has one), a sandbox whose config cannot be built is a
// FailedCreatePodSandBox event. The builder is usable without a Syncer;
// see its package.
//
// Every sandbox and container carries the labels and annotations of
// cri/labels.go (pod name, namespace, UID, container name, restart count,
// spec hash, grace period, termination message path, container type,
// preStop hook), so that a restarted agent rebuilds its view from the
// runtime alone: a new Syncer adopts what runs and starts no duplicates.
// What a Syncer keeps in memory is only backoffs and the last waiting
// reason per container, which the status block reads with WaitingReason
// (upstream's reason cache), and, in its builder, the host IDs of pods'
// user namespaces; RemovePod forgets a pod.
//
// # Probes
//
// Liveness and startup results come in through ProbeResults, one per kind.
// With the prober's results managers (Get(containerID) (prober.Result,
// bool)) the adapter is one line:
//
//	podsync.Probes{
//		Liveness: podsync.ProbeResultsFunc(func(id string) bool { r, ok := liveness.Get(id); return ok && r == prober.Failure }),
//		Startup:  podsync.ProbeResultsFunc(func(id string) bool { r, ok := startup.Get(id); return ok && r == prober.Failure }),
//	}
//
// # Threading
//
// New starts no goroutine. A Syncer's methods may be called concurrently
// for different pods; calls for one pod must be serialized (a pod worker
// does that). KillPod stops containers in parallel goroutines and returns
// only when they ended. Every runtime call is bounded by the caller's ctx;
// a failure of one container is reported in its step and does not stop the
// others (except that a failed init container stops what comes after it).
//
// # Fakes
//
// The Runtime interface is satisfied by cri/fake's *fake.Runtime, which with
// a k8s.io/utils/clock/testing.FakeClock (shared with the Syncer) drives
// whole crash loops without sleeping; the package tests show how.
package podsync
