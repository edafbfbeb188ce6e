// Package agenttest is a whole node in a unit test: an agent.Agent on the
// cri/fake runtime, every block on one fake Clock, with an in-memory API
// server that holds the node's pods, the statuses the node writes and the
// events it records. A test adds pods, steps time and reads statuses and
// events, and gets the same answers on every run.
//
//	func TestMyController(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			n := agenttest.NewNode(t, agenttest.Options{})
//			n.AddPod(pod)
//			n.Step(time.Minute)
//			p := n.Pod("default", "web") // phase, conditions, container states
//			...
//		})
//	}
//
// # Time
//
// Nothing moves until the test says so. Step(d) advances the clock to each
// timer, ticker or AfterFunc deadline in turn up to d later, fires it, and
// lets the node settle before the next: every goroutine of the node has
// gone back to waiting. StepUntil does the same until a condition holds;
// Settle lets the node finish what is due now (AddPod, UpdatePod and
// DeletePod settle by themselves). Timers due at the same instant fire one
// at a time in an order fixed by the code that made them, so a scenario
// plays out the same way on every run, with -race too: ten minutes of a
// crash loop take tens of milliseconds of wall time.
//
// Settling needs to know when every goroutine of the node is blocked, which
// only testing/synctest can tell: NewNode must be called inside
// synctest.Test, and fails the test otherwise. Deadlines of contexts follow
// the bubble's time, which the Node keeps in step with its Clock.
//
// # The node
//
// The agent runs with upstream's default timings and no jitter (Options.Rand
// returns 0), a fixed machine (4 CPUs, 8Gi, 110 pods) and a stats provider
// that measures empty filesystems and no memory, so that the test machine
// never causes an eviction. It has a kubeadm cluster's DNS (10.96.0.10,
// cluster.local) and no host resolv.conf unless the test gives one
// (Options.Agent.Node.ResolvConf), so that pods' DNS configs do not depend
// on the test machine. Pods added with AddPod come as an API server
// hands them to a kubelet (defaulted, bound to the node, with a UID), as a
// complete list after every change; the statuses the node writes are what
// Pod and Pods return; a graceful DeletePod sets the deletion timestamp,
// and the pod is gone once the node has written its final status. Static
// pods come from Options.Agent.Sources.ManifestPath as in any agent; their
// statuses are kept as their mirror pods would hold them.
//
// PodReady, PodEvents, ExecCalls and Hooks answer the usual questions of
// a test without CRI types: is the pod Ready, what did the node say about
// it, which commands did a container receive as exec, which of them were
// its postStart and preStop hooks.
//
// Runtime returns the fake runtime, to script what containers do (exit
// after a while, crash, ignore SIGTERM, fail to start), what exec probes
// and hooks answer, pulls that fail or take time, and faults of any CRI
// method. Options.Runtime puts a runtime of the test's own between the
// agent and the fake: a provider's, or one that leaves optional
// capabilities out (see agent.Runtime).
//
// # An API server of the test's own
//
// A test that gives Options.Agent.Cluster.Updates and StatusSink (both,
// or neither) has its pods in an API server of its own, as
// examples/nodetest does with client-go's fake clientset: NewNode keeps
// them, and AddPod, UpdatePod, DeletePod, SetPodCondition, Resend, Pod,
// Pods and PodReady, which read or write the in-memory server, fail the
// test. Events stay in memory whatever the source (Events, PodEvents); a
// Cluster.Recorder the test gives receives each of them too.
//
// # Limits
//
// Two probes of one pod due at the same instant run concurrently, as in any
// kubelet: a scenario whose outcome depends on which runs first (a liveness
// kill and a readiness probe at once) plays out either way. Offset their
// periods or initial delays.
//
// A static manifest (Options.Agent.Sources.ManifestPath) written or
// removed during a test is seen at the manifest directory's next poll, a second of fake time
// later, not within milliseconds as a real node watching it with inotify
// would: notifications from the kernel would arrive outside the fake time.
//
// Status writes do not come back to the agent as pod updates (upstream
// kubelet ignores them too, but for a terminal phase). There are no mirror
// pods, services, configMaps or secrets unless the test gives them
// (Options.Agent.Cluster.VolumeSources, Options.Agent.Cluster.Services);
// ResourceClaims are the ones SetResourceClaim stored.
// HTTP probes and hooks would dial the fake runtime's pod IPs, which
// nothing serves; script exec probes instead.
package agenttest
