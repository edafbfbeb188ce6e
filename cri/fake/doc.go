// Package fake is an in-memory CRI v1 runtime: a *Runtime implements
// cri.RuntimeService and cri.ImageService, behaves like containerd (1.6 and
// 1.7's CRI plugin) where a kubelet notices, and can be served over a unix
// socket with cri.NewServer, so that crictl, critest or a kubelet talk to it.
// Controllers and node agents are unit-tested against it without a runtime,
// a network or root.
//
//	clk := clocktesting.NewFakeClock(start)
//	rt := fake.New(fake.Options{
//		Clock:  clk,
//		Images: []string{"busybox"},
//		Rules: []fake.Rule{{
//			Image:    "busybox",
//			Command:  []string{"sh", "-c", "exit 3"},
//			Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 3, RunFor: 10 * time.Second},
//		}},
//	})
//	defer rt.Close()
//	// RunPodSandbox, CreateContainer, StartContainer as a kubelet would...
//	clk.Step(10 * time.Second) // the container exits inside Step
//
// # What it models
//
// Sandboxes are READY until stopped, then NOTREADY. One that does not use
// the node's network gets an IP from 10.88.0.0/16 (containerd's default
// bridge network), handed out in order like the host-local IPAM plugin and
// released when the sandbox stops. Namespace options, labels, annotations
// and the runtime handler are echoed back. Sandbox and container names are
// reserved as containerd reserves them (ErrAlreadyExists on reuse).
//
// Containers go CREATED → RUNNING → EXITED, with CreatedAt, StartedAt and
// FinishedAt from the clock, and containerd's exit codes and reasons:
// Completed (exit 0), Error, OOMKilled (137), StartError (128, with the
// error as message); killed by StopContainer or StopPodSandbox without
// grace, 137; by SIGTERM, 143. Creating one needs a ready sandbox and an
// image that is present (pulled, preloaded with Options.Images or
// AddImage); a security context with RunAsGroup but no user is refused, as
// containerd refuses it. Stopping a container that does not exist succeeds,
// as in containerd 1.7 and the current CRI (1.6 said NotFound). Its log is
// written at LogDirectory/LogPath in the CRI log format, and
// ReopenContainerLog recreates it after rotation.
//
// Images are pulled (any reference, unless Options.Registry lists the known
// ones), listed, inspected and removed. References are normalized as
// containerd does (busybox is docker.io/library/busybox:latest, see
// NormalizeImage); an image's ID is the sha256 of its normalized reference,
// unless SetPullBehavior says which ID the registry serves for it
// (references with one ID are one image with several tags) and which USER
// its config has (ImageStatus's Uid or Username).
//
// Stats are zero unless a test sets them (SetContainerStats,
// SetPodSandboxStats) or a UsageRule scripts a running container's CPU and
// memory (Options.UsageRules, SetUsageRules): it then reports its rate as
// usage_nano_cores and a cumulative CPU time growing at that rate on the
// clock, so that a node on the fake shows figures in kubectl top, and its
// sandbox reports the sums of its running containers. ImageFsInfo reports
// the images' total size unless SetImageFsInfo says otherwise; Status
// reports RuntimeReady and NetworkReady (SetRuntimeReady, SetNetworkReady);
// RuntimeConfig reports the cgroup driver (SetCgroupDriver).
//
// GetContainerEvents streams containerd 1.7's events: CREATED, STARTED,
// STOPPED and DELETED, for containers and sandboxes, each with the pod's
// sandbox and container statuses.
//
// # Scripting
//
// A container does what the first Rule matching its image, name and
// command says (Behavior): run until stopped (the default), exit with a
// code after a while, be OOM-killed after a while, fail to start; answer
// SIGTERM by dying (143, the default), by exiting cleanly after a shutdown
// time, or by ignoring it until the stop timeout (137); write lines to its
// log when it starts, and again every LogEvery, LogRepeat times, like a
// loop that logs (such a container keeps its log file open, so a renamed
// file keeps growing until ReopenContainerLog, as with a real runtime).
// ExitContainer ends a running container at any time, as a crash would.
//
// ExecSync runs the first matching ExecRule: output, exit code, duration.
// Without one, built-in defaults give a generic client something plausible:
// "echo ARGS..." prints ARGS joined by spaces and a newline ("-n" drops the
// newline), "sh -c 'echo ARGS...'" likewise when the script is a plain echo
// with no quoting, redirection or other shell syntax, "cat FILE..." prints
// the files under the container's mounts as the container would see them
// (the host file behind the longest mount's ContainerPath; busybox's
// messages for a missing file; nothing for a path outside every mount),
// "false" exits 1, and everything else, "true" included, exits 0 with no
// output. This is a convenience, not an interpreter: script
// anything else with an ExecRule.
//
// SetPullBehavior gives pulls of an image latency or failure, and says
// what the registry serves for it (image ID, USER).
//
// InjectFault makes any method (named by a Method constant) fail with an
// error, wait a latency, or hang until the caller's ctx ends, for every
// call or the next few; ClearFault removes faults.
//
// # Time
//
// Every timestamp, scripted exit, stop timeout, exec duration, injected
// latency and pull delay uses Options.Clock. With
// k8s.io/utils/clock/testing.FakeClock a test steps time: a scripted exit
// happens synchronously inside Step, with FinishedAt the exact time it was
// due. A call that waits on the clock (a StopContainer whose container
// ignores SIGTERM, an exec with a duration, a latency) parks on a timer;
// FakeClock.HasWaiters (or Waiters) tells the test it is parked, so it can
// step without sleeping. Pending scripted exits and periodic log writes are
// waiters too. A FakeClock step past several due timers runs them in the
// order they were made, not in time order: the fake writes no periodic log
// line at or after a scripted exit, but a line due after a StopContainer
// whose wait ends in the same step may still be written.
//
// # Observing and overriding
//
// Every CRI call is recorded as a Call holding the CRI request message it
// corresponds to (Calls, CallsOf, ResetCalls; past Options.CallHistory the
// older half is forgotten). Sandboxes and Containers return the current
// state without being recorded. To override a method, embed *Runtime in a
// type of your own and define the method there; the others stay the fake's.
//
// # Concurrency
//
// A Runtime is safe for concurrent use and starts no goroutine. It holds
// one lock, only for in-memory work and the small writes of container logs:
// never while it waits on the clock or a ctx, never while it calls the clock
// (so FakeClock.Step may run its callbacks), never while a subscriber reads.
// Requests are copied before they are kept, and returned messages are
// never changed by the runtime afterwards. Status, image and stats messages
// are fresh copies; the entries of ListPodSandbox and ListContainers are
// built once per object and state and shared between calls (a list of a
// 10,000-pod node copies nothing), so treat list results as read-only, as
// kubeletkit treats every runtime message.
//
// Sandboxes and containers are listed in creation order, images by ID;
// containerd promises no order, so do not depend on it against a real
// runtime.
//
// # Limits
//
// Nothing runs: there are no processes, no filesystems besides the log
// files, no networking (an IP is a number handed out, nothing answers on
// it), no users, capabilities, seccomp, sysctls, mounts or namespaces (they
// are echoed back, never enforced) and no resource accounting: a rule's
// OOMKill does not look at the memory limit. ExecSync's defaults are not a
// shell. docs/cri.md lists what the critest suite finds out about this.
// Exec, Attach and PortForward fail with cri.ErrUnimplemented: there is no
// streaming server, so kubectl exec, attach and port-forward cannot work.
// A container's argv is its config's Command and Args only: there is no
// image config with an ENTRYPOINT or CMD. Each events stream queues at most
// Options.EventQueueSize events (1000 by default, containerd's channel
// size); a stream whose reader falls further behind ends with an error
// wrapping ErrEventsLost (and cri.ErrUnavailable), so that a PLEG relists,
// instead of silently dropping events as containerd does. A failed start
// sends no event, as in containerd. After Close every CRI call fails with
// ErrClosed.
package fake
