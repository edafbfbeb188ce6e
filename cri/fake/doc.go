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
// containerd refuses it. A mount of an image (an image volume: the CRI
// Mount's Image set) needs, as in containerd 2.1, its image present
// (ErrNotFound), no host path and read-only (ErrInvalidArgument); it is
// recorded with the container and reported in its status. Stopping a container that does not exist succeeds,
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
// the images' total size on one filesystem for images and containers,
// unless SetFilesystems puts the writable layers on a container filesystem
// of their own (their usage is then the sum of the containers' writable
// layers, a split disk as CRI-O's) or SetImageFsInfo says otherwise; Status
// reports RuntimeReady and NetworkReady (SetRuntimeReady, SetNetworkReady);
// RuntimeConfig reports the cgroup driver (SetCgroupDriver), or answers
// Unimplemented as containerd 1.6 does with
// InjectFault(RuntimeConfig, Fault{Err: cri.ErrUnimplemented}).
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
// A container no rule matches runs until stopped, and what the echo
// commands at the start of its command print (echo, or a shell script such
// as sh -c 'echo serving; exec sleep 3600') goes to its log as it starts.
//
// # Commands
//
// ExecSync, a streaming exec, and the process of a container that reads
// its stdin (see Streaming) run commands the same way. The first matching
// ExecRule decides: output, exit code, and a duration on the clock (an
// ExecSync whose commands wait longer than its timeout fails with
// cri.ErrTimeout). Without one, built-in commands give a client something
// plausible; they are a convenience, not busybox:
//
//   - echo [-n] ARGS prints its arguments; true exits 0, false 1.
//   - sh -c SCRIPT (bash, ash, dash too) runs a script of simple commands:
//     words with single and double quotes and backslashes, comments, and
//     the operators ;, &&, || and newline; exit [N]. Each command goes
//     through the rules and built-ins in turn. A script with other syntax
//     (expansions, redirections, pipes, globs, compound commands,
//     assignments) is the default: exit 0, no output. sh alone (or -i, -s,
//     -l) reads such commands from stdin, a line at a time, until EOF or
//     exit, printing busybox's root prompt "/ # " on a terminal; there, a
//     line it cannot interpret prints an error and sets status 2.
//   - cat [FILE...] prints files as the container sees them (below), or
//     copies stdin ("-" or no file). Messages are busybox's.
//   - test EXPR and [ EXPR ] evaluate -e, -f, -d and -s on a path, and !;
//     other expressions are the default (true).
//   - mkdir [-p] DIR... creates directories among the container's files.
//   - tar c, x and t with f - (stdin or stdout only), C DIR, z, v, m: enough
//     for kubectl cp, which runs "tar cf - PATH" and "tar xmf - -C DIR".
//     Directories, files and symbolic links (archived as links, never
//     followed); a member whose name leaves DIR is refused.
//   - Anything else exits 0 with no output.
//
// What a container sees at a path: under one of its mounts, the host file
// behind the mount with the longest container path (read only: the fake
// never writes a host file, and says so; a symbolic link that leads out of
// the mount's host path reads as missing); elsewhere, its own files, in
// memory: the directories at the root of a busybox image, empty, and what
// mkdir and tar wrote (at most MaxContainerFiles bytes). A new container,
// a restart included, starts with the bare directories again. Under a
// mount of an image the files are the image's, which the fake does not
// know: as a path that is neither a mount nor the container's own, cat
// prints nothing and test finds nothing. cat of a
// path that is neither prints nothing, as the fake cannot know what an
// image holds (critest reads /proc/self/status and /proc/1/cmdline so);
// test finds nothing there.
//
// # Streaming: exec, attach, port-forward
//
// NewStreamingServer and StreamingServer.Run serve the runtime's streaming
// sessions over HTTP, with the SPDY and WebSocket protocols of
// k8s.io/cri-streaming, the server containerd and CRI-O embed, so that
// kubectl (through a kubelet's API), crictl and critest exec, attach and
// port-forward as against a real runtime:
//
//	lis, _ := net.Listen("tcp", "127.0.0.1:0")
//	srv, err := fake.NewStreamingServer(rt, fake.StreamingOptions{Listener: lis})
//	go srv.Run(ctx) // until ctx ends; every session ends with it
//	resp, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdin: true, Stdout: true, Tty: true})
//	// resp.Url is http://127.0.0.1:PORT/exec/TOKEN, good for one session
//
// While it runs, Exec, Attach and PortForward return URLs on it, with
// containerd's checks: a container that exists and runs (a sandbox that is
// ready), stdin, stdout or stderr asked for, not both a tty and stderr.
// Without one they fail with cri.ErrUnimplemented.
//
// An exec session runs its command as above with the client's streams: a
// non-zero exit reaches the client as the exit code; stopping the
// container kills the command (137). With a tty, a terminal sits between
// the client and the command, as a pseudo-terminal's line discipline:
// what the client types is echoed and handed over a line at a time, with
// erase (DEL, ^H), kill (^U), eof (^D on an empty line) and intr (^C: the
// line is dropped, and a command reading it ends with 130; a command
// waiting on the clock cannot be interrupted); output newlines become
// CRLF. Terminal size changes are accepted and ignored.
//
// An attach session copies what the container's process writes from then
// on (the Behavior lines it logs periodically, and the output of the
// commands below) to the client until the container stops; nothing earlier
// is replayed. A client that falls 4 MiB behind is detached. What the
// client sends goes to the process's stdin when its config has Stdin: a
// container whose argv is a shell without a script (sh, /bin/sh -i) runs
// it a line at a time as above, its output going to the log and to every
// attached client (with the config's Tty, through a terminal, prompt
// included); one whose argv is cat (or cat -) echoes it; any other ignores
// it. One client feeds stdin at a time; another's input waits its turn.
// When the client's stdin ends, a StdinOnce container's stdin closes (as
// in containerd, unless the client asked for a tty), so a shell or cat
// reading it exits, and the container with it; otherwise the session ends
// and the container runs on. exit in the shell, or ^D on its terminal,
// exits the container with that status.
//
// A port-forward session connects each forwarded connection to what the
// first matching PortRule names: a running container of the sandbox by
// image and name, and the port. Address dials a real TCP address and
// copies both ways; Handler answers in-process (EchoPort echoes). A port
// no rule matches refuses the connection with containerd's message, as a
// pod where nothing listens.
//
// SetPullBehavior gives pulls of an image latency or failure, makes the
// registry require credentials for it (PullBehavior.Auth: a pull with
// none or others is refused), and says what the registry serves for it
// (image ID, USER).
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
// A Runtime is safe for concurrent use and starts no goroutine (a
// StreamingServer's Run serves the sessions, and returns once every
// goroutine it started has ended). It holds
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
// files and each container's few in-memory files, no networking (an IP is
// a number handed out, nothing answers on it; a port-forward reaches only
// what a PortRule names), no users, capabilities, seccomp, sysctls, mounts or namespaces (they
// are echoed back, never enforced) and no resource accounting: a rule's
// OOMKill does not look at the memory limit. The built-in commands are not
// a shell, and a container's files are not an image's. docs/cri.md lists
// what the critest suite finds out about this. Exec, Attach and
// PortForward need a StreamingServer. A container's argv is its config's Command and Args only: there is no
// image config with an ENTRYPOINT or CMD. Each events stream queues at most
// Options.EventQueueSize events (1000 by default, containerd's channel
// size); a stream whose reader falls further behind ends with an error
// wrapping ErrEventsLost (and cri.ErrUnavailable), so that a PLEG relists,
// instead of silently dropping events as containerd does. A failed start
// sends no event, as in containerd. After Close every CRI call fails with
// ErrClosed.
package fake
