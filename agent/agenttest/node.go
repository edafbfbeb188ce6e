package agenttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Options configure a Node. The zero value is a node named "node1" whose
// containers run until they are stopped.
type Options struct {
	// Agent are the agent's options. NewNode sets Clock and Runtime, and
	// Cluster.Updates and Cluster.StatusSink unless the test gives them
	// (both: see "An API server of the test's own" in the package doc), and
	// Cluster.Recorder (one the test gives receives every event too); it fills
	// in, where they are zero, Cluster.ResourceClaims (the claims of
	// SetResourceClaim), NodeName ("node1"), Node.HostIPs
	// (192.0.2.10), Node.ClusterDNS (10.96.0.10, a kubeadm cluster's, with
	// Node.ClusterDomain cluster.local; a non-nil empty ClusterDNS is a
	// node without cluster DNS), Node.ResolvConf (agent.ResolvConfNone: the
	// test machine's own is not the pods'), RootDir (a t.TempDir), Node.Machine (4
	// CPUs, 8Gi of memory, 110 pods, 100Gi of ephemeral storage),
	// Eviction.Stats (a node whose filesystems are empty and whose memory
	// is not measured, so that the test machine's own never evicts a
	// test's pods or collects its images; give an *evictiontest.Stats to
	// script pressure) and Rand (no jitter). Security.NoMounts and Sources.PollManifests are always set.
	Agent agent.Options
	// Rules script the fake runtime's containers (see fake.Rule); the
	// first match decides, and a container no rule matches runs until it
	// is stopped. Runtime().SetRules replaces them later.
	Rules []fake.Rule
	// ExecRules script what the fake runtime's exec calls answer (exec
	// probes, exec hooks, kubectl exec; see fake.ExecRule); the first match
	// decides, and a command no rule matches gets the runtime's built-in
	// commands. Runtime().SetExecRules replaces them later.
	ExecRules []fake.ExecRule
	// Images are present in the fake runtime from the start.
	Images []string
	// Runtime, when set, is what the agent drives, built over the node's
	// fake runtime as the agent would otherwise drive it: a provider's
	// runtime, or a wrapper that leaves some of the optional capabilities
	// out (see agent.Runtime) to test how the node does without them. Its
	// calls reach the fake (Node.Runtime, which still returns it, records
	// them) through what it forwards. Nil means the fake itself.
	Runtime func(agent.FullRuntime) agent.Runtime
}

// Node is a whole node in a unit test: one agent on the fake runtime, all
// on one fake Clock, with an in-memory API server for its pods, their
// statuses and events. Its methods must be called from the test's
// goroutine.
type Node struct {
	t     testing.TB
	clock *Clock
	rt    *fake.Runtime
	a     *agent.Agent
	api   *apiServer
	index *index
	// own is set when the test gave the node its own Cluster.Updates and
	// StatusSink: api then holds no pods.
	own bool
}

// NewNode starts a node for the test, which must run inside synctest.Test,
// and stops it when the test ends; a failure fails the test. It returns
// once the agent has started and settled.
func NewNode(t testing.TB, opts Options) *Node {
	t.Helper()
	if !inBubble() {
		t.Fatalf("agenttest: NewNode must be called inside synctest.Test: settling needs the bubble to know when every goroutine of the node waits")
	}
	clk := newClock(time.Now())
	o := opts.Agent
	o.Clock = clk
	if o.NodeName == "" {
		o.NodeName = "node1"
	}
	if len(o.Node.HostIPs) == 0 {
		o.Node.HostIPs = []string{"192.0.2.10"}
	}
	if o.Node.ClusterDNS == nil {
		o.Node.ClusterDNS = []string{"10.96.0.10"}
		if o.Node.ClusterDomain == "" {
			o.Node.ClusterDomain = "cluster.local"
		}
	}
	if o.Node.ResolvConf == "" {
		// The test machine's own is not the pods'.
		o.Node.ResolvConf = agent.ResolvConfNone
	}
	if o.RootDir == "" {
		o.RootDir = t.TempDir()
	}
	if o.Node.Machine == nil {
		o.Node.Machine = nodetest.Machine{Cap: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("4"),
			v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
			// The filesystem of pods' ephemeral storage, which admission
			// counts their requests against.
			v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}}
	}
	if o.Eviction.Stats == nil {
		o.Eviction.Stats = idleStats()
	}
	if o.Rand == nil {
		o.Rand = func() float64 { return 0 }
	}
	o.Security.NoMounts = true
	// The kernel's notifications of manifest changes would arrive outside
	// the fake time; the poll runs on it.
	o.Sources.PollManifests = true
	own := o.Cluster.Updates != nil || o.Cluster.StatusSink != nil
	if own && (o.Cluster.Updates == nil || o.Cluster.StatusSink == nil) {
		t.Fatalf("agenttest: Options.Agent.Cluster.Updates and StatusSink go together: give both or neither")
	}
	rt := fake.New(fake.Options{Clock: clk, Rules: opts.Rules, ExecRules: opts.ExecRules, Images: opts.Images, Logger: o.Logger})
	api := newAPIServer(clk, o.NodeName)
	idx := newIndex()
	in := o.Cluster.Updates
	if !own {
		in, o.Cluster.StatusSink = api.updates, api
	}
	updates := make(chan syncloop.PodUpdate)
	var drive agent.FullRuntime = indexedRuntime{Runtime: rt, index: idx}
	o.Runtime, o.Cluster.Updates = drive, updates
	if opts.Runtime != nil {
		o.Runtime = opts.Runtime(drive)
	}
	if o.Cluster.Recorder == nil {
		o.Cluster.Recorder = api
	} else {
		o.Cluster.Recorder = teeRecorder{api, o.Cluster.Recorder}
	}
	if o.Cluster.ResourceClaims == nil {
		o.Cluster.ResourceClaims = api
	}
	a, err := agent.New(o)
	if err != nil {
		rt.Close()
		t.Fatalf("agenttest: %v", err)
	}
	n := &Node{t: t, clock: clk, rt: rt, a: a, api: api, index: idx, own: own}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	wg.Add(3)
	go func() { defer wg.Done(); runErr = a.Run(ctx) }()
	go func() { defer wg.Done(); idx.relay(ctx, in, updates) }()
	go func() {
		defer wg.Done()
		if !own {
			api.run(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		rt.Close()
		if runErr != nil {
			t.Errorf("agenttest: the agent stopped: %v", runErr)
		}
	})
	n.Settle()
	select {
	case <-a.Ready():
	default:
		t.Fatalf("agenttest: the agent did not start: %v", runErr)
	}
	return n
}

// inBubble reports whether the caller runs inside synctest.Test.
func inBubble() (in bool) {
	defer func() {
		if recover() != nil {
			in = false
		}
	}()
	synctest.Wait()
	return true
}

// Agent returns the node's agent.
func (n *Node) Agent() *agent.Agent { return n.a }

// Runtime returns the node's fake runtime, to script containers (SetRules,
// SetExecRules), pulls (SetPullBehavior), faults (InjectFault) and to read
// what runs.
func (n *Node) Runtime() *fake.Runtime { return n.rt }

// Clock returns the node's clock.
func (n *Node) Clock() *Clock { return n.clock }

// Now returns the node's time.
func (n *Node) Now() time.Time { return n.clock.Now() }

// Settle lets every block of the node run until nothing more is due at the
// current time: everything woken has gone back to waiting (synctest.Wait),
// and every timer due now has fired.
func (n *Node) Settle() {
	for {
		synctest.Wait()
		if !n.clock.fireOne() {
			return
		}
	}
}

// Step advances the node's time by d, firing every timer in between in the
// order of its deadline and letting the node settle after each, then
// settles at the new time.
func (n *Node) Step(d time.Duration) {
	n.t.Helper()
	if d < 0 {
		n.t.Fatalf("agenttest: Step(%s): negative", d)
	}
	end := n.clock.Now().Add(d)
	n.Settle()
	for {
		next, ok := n.clock.next()
		if !ok || next.After(end) {
			break
		}
		n.advance(next)
		n.Settle()
	}
	n.advance(end)
	n.Settle()
}

// StepUntil advances the node's time, timer by timer, until cond holds
// after the node has settled, or until limit has passed. It reports whether
// cond held; the node's time is then the first instant it did (or limit
// later). cond runs on the test's goroutine between steps.
func (n *Node) StepUntil(limit time.Duration, cond func() bool) bool {
	n.t.Helper()
	end := n.clock.Now().Add(limit)
	n.Settle()
	for !cond() {
		next, ok := n.clock.next()
		if !ok || next.After(end) {
			n.advance(end)
			n.Settle()
			return cond()
		}
		n.advance(next)
		n.Settle()
	}
	return true
}

// advance moves both the node's clock and the bubble's time to t, so that
// the deadlines of contexts (which follow the bubble's time) pass along
// with the clock's.
func (n *Node) advance(t time.Time) {
	if d := t.Sub(time.Now()); d > 0 {
		time.Sleep(d)
	}
	n.clock.set(t)
}

// AddPod hands pod to the node as an API server would after binding it:
// defaulted as the API server defaults a pod, with a UID, the node's name
// and a creation time when they are missing. It returns the pod as stored.
// A pod of the same namespace and name already there fails the test.
func (n *Node) AddPod(pod *v1.Pod) *v1.Pod {
	n.t.Helper()
	n.needAPI("AddPod")
	p := pod.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = n.a.NodeName()
	}
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(n.clock.Now())
	}
	validation.DefaultPod(p)
	if err := n.api.add(p); err != nil {
		n.t.Fatalf("agenttest: AddPod: %v", err)
	}
	n.Settle()
	return n.Pod(p.Namespace, p.Name)
}

// UpdatePod replaces the spec and metadata of the pod of the same
// namespace and name, keeping its UID and status, as an update through the
// API server does.
func (n *Node) UpdatePod(pod *v1.Pod) {
	n.t.Helper()
	n.needAPI("UpdatePod")
	if err := n.api.update(pod); err != nil {
		n.t.Fatalf("agenttest: UpdatePod: %v", err)
	}
	n.Settle()
}

// SetPodCondition sets one condition of a pod's status as another
// controller does through the API: the condition of a readiness gate, for
// example, which the node then takes into the pod's Ready condition.
func (n *Node) SetPodCondition(namespace, name string, c v1.PodCondition) {
	n.t.Helper()
	n.needAPI("SetPodCondition")
	if err := n.api.setCondition(namespace, name, c); err != nil {
		n.t.Fatalf("agenttest: SetPodCondition: %v", err)
	}
	n.Settle()
}

// DeletePod deletes a pod gracefully, as kubectl delete does: the pod's
// terminationGracePeriodSeconds (30s by default) is its deletion grace
// period. The node stops its containers, then the pod is removed once its
// final status is written.
func (n *Node) DeletePod(namespace, name string) {
	n.t.Helper()
	n.DeletePodWithGrace(namespace, name, -1)
}

// DeletePodWithGrace deletes a pod with a grace period of seconds (0: at
// once; negative: the pod's own), as kubectl delete --grace-period does.
func (n *Node) DeletePodWithGrace(namespace, name string, seconds int64) {
	n.t.Helper()
	n.needAPI("DeletePod")
	if err := n.api.delete(namespace, name, seconds); err != nil {
		n.t.Fatalf("agenttest: DeletePod: %v", err)
	}
	n.Settle()
}

// Resend sends the node its pods again as the API server holds them, with
// the statuses the node wrote: what an informer's watch brings back after
// the node's own status writes, which the node is otherwise not sent. A
// pod whose status alone changed reaches the node as a reconcile.
func (n *Node) Resend() {
	n.t.Helper()
	n.needAPI("Resend")
	n.api.notify()
	n.Settle()
}

// SetResourceClaim stores a ResourceClaim in the API server, replacing one
// of the same namespace (default when empty) and name: what the node reads
// for a pod whose spec.resourceClaims name it. The node registers no DRA
// driver, so a pod whose claim was allocated a device waits in
// ContainerCreating (see agent.ClusterOptions.ResourceClaims).
func (n *Node) SetResourceClaim(c *resourcev1.ResourceClaim) {
	n.api.setClaim(c)
}

// Pod returns the pod as the API server holds it, with the status the node
// last wrote, or nil when there is none of that name.
func (n *Node) Pod(namespace, name string) *v1.Pod {
	n.t.Helper()
	n.needAPI("Pod")
	return n.api.get(namespace, name)
}

// Pods returns every pod the API server holds, sorted by namespace and
// name.
func (n *Node) Pods() []*v1.Pod {
	n.t.Helper()
	n.needAPI("Pods")
	return n.api.list()
}

// Event is an event the node recorded.
type Event struct {
	// Time is the node's time when it was recorded.
	Time time.Time
	// Object names what it is about: "Pod default/web", "Node node1".
	Object string
	// Type is Normal or Warning.
	Type string
	// Reason and Message are upstream's.
	Reason, Message string
}

// String formats the event on one line, without its time: "Pod default/web
// Warning BackOff Back-off restarting failed container ...".
func (e Event) String() string {
	return fmt.Sprintf("%s %s %s %s", e.Object, e.Type, e.Reason, e.Message)
}

// Events returns the events recorded so far, oldest first (those a
// Cluster.Recorder of the test's own received too).
func (n *Node) Events() []Event { return n.api.eventList() }

// teeRecorder records each event in the in-memory server, then in the
// test's own recorder.
type teeRecorder struct {
	api *apiServer
	own agent.EventRecorder
}

// Eventf implements agent.EventRecorder.
func (r teeRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.api.Eventf(object, eventtype, reason, messageFmt, args...)
	r.own.Eventf(object, eventtype, reason, messageFmt, args...)
}

// needAPI fails the test when the node's pods are in the test's own API
// server, which the in-memory one's methods cannot reach.
func (n *Node) needAPI(method string) {
	n.t.Helper()
	if n.own {
		n.t.Fatalf("agenttest: %s: the node's pods come from the test's own Options.Agent.Cluster.Updates and StatusSink: use its API server", method)
	}
}

func timeSeconds(s int64) time.Duration { return time.Duration(s) * time.Second }

// idleStats is a node with empty 100Gi filesystems and no memory measured.
func idleStats() *evictiontest.Stats {
	const size = 100 << 30
	fs := func() *stats.FsStats {
		return &stats.FsStats{CapacityBytes: size, AvailableBytes: size, Inodes: 1 << 20, InodesFree: 1 << 20}
	}
	s := &evictiontest.Stats{}
	s.Set(stats.Summary{Node: stats.NodeStats{Fs: fs(), ImageFs: fs()}})
	return s
}
