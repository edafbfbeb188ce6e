package vkprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Options configure a Provider. Only Agent matters for a provider driven
// by hand; NewProviderFunc fills Node and Pods from VK.
type Options struct {
	// Agent configures the kubelet that runs the pods: its Runtime is the
	// CRI-shaped backend (cri.Dial's client for containerd or CRI-O, a
	// *fake.Runtime, or a shim of one's own; nil means the agent's
	// embedded fake runtime). The provider fills the agent's
	// Cluster: it owns Cluster.Updates, Cluster.StatusSink and
	// Cluster.NodeStatusSink, which must be nil, and sets
	// Cluster.ReportHostIPs (pods report their host IPs, as under an API
	// server). Cluster.Leases must be nil: VK keeps the Node's Lease.
	// Cluster.Node nil, with Client, means the API server's Node, watched
	// by the provider (see Client).
	// NodeName must be the Node's name; empty means Node's.
	Agent agent.Options
	// Client is the API server VK talks to, with the node's credentials.
	// Optional. With it, unless Agent sets its own, pods' configMap,
	// secret and projected service account token volumes and environment
	// come from the API server (examples/apiserver's WatchingSources),
	// containers get the service environment variables (Cluster.Services),
	// events are recorded as upstream kubelet's (NewRecorder), and a
	// finished deleted pod is deleted from the API server at once, as
	// upstream's status manager does (VK would wait for the end of its
	// grace period). With it too, unless Agent.Cluster.Node is set, pods
	// are admitted against the Node as the API server has it, followed by a
	// watch of that Node (examples/apiserver's NodeWatcher): nodeSelector
	// and node affinity match the labels others set on it, and its taints
	// count. Without a client, and until the watch has read the Node, the
	// agent admits against its own Node: its name, the default labels and
	// Agent.Node.Labels, no taints.
	Client kubernetes.Interface
	// Pods lists the API server's pods bound to the node, as VK's informer
	// holds them (nodeutil.ProviderConfig.Pods). Optional. With it, the
	// agent learns that it knows every pod only once VK has handed it the
	// pods its informer lists (or after InitialSyncTimeout), so that a
	// restarted node adopts their running containers instead of killing
	// them; GetPod tells VK that a name now belongs to a pod of another
	// UID; DeletePod tells a pod that left the API server from one being
	// deleted; the conditions other writers set are kept, and readiness
	// gates are read every GatePoll; and a finished pod is deleted from the
	// API server only once its terminal status is there.
	Pods corev1listers.PodLister
	// Node is the Node VK registers (nodeutil.ProviderConfig.Node). The
	// agent's node status is merged into a copy of it (MergeNodeStatus)
	// for NotifyNodeStatus. Nil means a Node named as the agent.
	Node *v1.Node
	// Logger receives the provider's logs, and the agent's when
	// Agent.Logger is nil; nil discards them.
	Logger *slog.Logger
}

// Provider is a virtual-kubelet provider that runs pods with a kubeletkit
// agent: node.PodLifecycleHandler and node.PodNotifier, node.NodeProvider,
// and nodeutil.Provider. Build it with New, hand it to VK, and run it with
// Run beside VK's node. Its methods are safe for concurrent use.
type Provider struct {
	opts    Options
	agent   *agent.Agent
	log     *slog.Logger
	clock   agent.Clock
	updates chan syncloop.PodUpdate
	notify  *notifier
	node    *nodeNotifier

	// With Options.Client: the API server's volume sources, services,
	// events and Node, and the deleter of finished pods.
	volumes  *apiserver.WatchingSources
	services *apiserver.Services
	deleter  *apiserver.StatusSink
	recorder *apiserver.GatedRecorder
	nodes    *apiserver.NodeWatcher // set by New when the agent admits against it

	// lifetime ends when Run returns, and with it every request's stream;
	// requests counts the goroutines those streams run.
	lifetime context.Context
	end      context.CancelFunc
	requests sync.WaitGroup
	stopped  chan struct{} // closed when Run returns
	ran      atomic.Bool

	wasHealthy atomic.Bool // the agent once answered Ping healthy

	mu      sync.Mutex
	pods    map[string]*entry // by namespace/name
	version uint64            // bumped at every change of pods
	listed  bool              // VK called GetPods
	wake    chan struct{}     // the pod feed's; capacity 1
}

var (
	_ nodeutil.Provider = (*Provider)(nil)
	_ node.NodeProvider = (*Provider)(nil)
)

// New builds a Provider and its agent; it starts nothing. It refuses
// Agent options that the provider owns.
func New(opts Options) (*Provider, error) {
	a := opts.Agent
	switch {
	case a.Cluster.Updates != nil:
		return nil, fmt.Errorf("new provider: Agent.Cluster.Updates is the provider's (VK's pods): %w", ErrInvalidOptions)
	case a.Cluster.StatusSink != nil:
		return nil, fmt.Errorf("new provider: Agent.Cluster.StatusSink is the provider's (NotifyPods): %w", ErrInvalidOptions)
	case a.Cluster.NodeStatusSink != nil:
		return nil, fmt.Errorf("new provider: Agent.Cluster.NodeStatusSink is the provider's (NotifyNodeStatus): %w", ErrInvalidOptions)
	case a.Cluster.Leases != nil:
		return nil, fmt.Errorf("new provider: Agent.Cluster.Leases must be nil: VK keeps the node's Lease: %w", ErrInvalidOptions)
	}
	if opts.Node != nil {
		switch {
		case a.NodeName == "":
			a.NodeName = opts.Node.Name
		case a.NodeName != opts.Node.Name:
			return nil, fmt.Errorf("new provider: Agent.NodeName %q is not the Node's name %q: %w", a.NodeName, opts.Node.Name, ErrInvalidOptions)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if a.Logger == nil {
		a.Logger = log
	}
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	lifetime, end := context.WithCancel(context.Background())
	p := &Provider{opts: opts, log: log, clock: a.Clock, updates: make(chan syncloop.PodUpdate), notify: newNotifier(),
		lifetime: lifetime, end: end, stopped: make(chan struct{}), pods: map[string]*entry{}, wake: make(chan struct{}, 1)}
	a.Cluster.Updates, a.Cluster.StatusSink, a.Cluster.ReportHostIPs = p.updates, statusSink{p}, true
	if err := p.useClient(&a); err != nil {
		end()
		return nil, err
	}
	p.node = &nodeNotifier{wake: make(chan struct{}, 1)}
	a.Cluster.NodeStatusSink = nodeSink{p.node}
	ag, err := agent.New(a)
	if err != nil {
		end()
		return nil, fmt.Errorf("new provider: %w", err)
	}
	p.agent = ag
	if err := p.watchNode(); err != nil {
		end()
		return nil, err
	}
	p.node.base = opts.Node.DeepCopy()
	if p.node.base == nil {
		p.node.base = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: ag.NodeName()}}
	}
	p.opts.Node = p.node.base
	return p, nil
}

// useClient puts the API server's adapters into the agent's options where
// the caller gave none.
func (p *Provider) useClient(a *agent.Options) error {
	c := p.opts.Client
	if c == nil {
		return nil
	}
	var err error
	if p.deleter, err = apiserver.NewStatusSink(c, apiserver.StatusSinkOptions{Logger: p.log.With("component", "api-delete")}); err != nil {
		return fmt.Errorf("new provider: %w", err)
	}
	if v := a.Cluster.VolumeSources; v.ConfigMaps == nil && v.Secrets == nil && v.Tokens == nil {
		if p.volumes, err = apiserver.NewWatchingSources(c, apiserver.WatchingSourcesOptions{Logger: p.log.With("component", "api-volumes")}); err != nil {
			return fmt.Errorf("new provider: %w", err)
		}
		a.Cluster.VolumeSources = p.volumes.Sources()
	}
	if a.Cluster.Services == nil {
		if p.services, err = apiserver.NewServices(c, apiserver.ServicesOptions{Logger: p.log.With("component", "api-services")}); err != nil {
			return fmt.Errorf("new provider: %w", err)
		}
		a.Cluster.Services = p.services
	}
	if a.Cluster.Recorder == nil {
		p.recorder = &apiserver.GatedRecorder{}
		a.Cluster.Recorder = p.recorder
	}
	if p.watchesNode() {
		// The watcher needs the node's name, which the agent settles
		// (the host name when none is given): watchNode builds it once
		// the agent is built, before it can admit a pod.
		a.Cluster.Node = admission.NodeGetterFunc(func() (*v1.Node, error) { return p.nodes.Node() })
	}
	return nil
}

// watchesNode reports whether the agent admits pods against the API
// server's Node as the provider's watcher has it.
func (p *Provider) watchesNode() bool {
	return p.opts.Client != nil && p.opts.Agent.Cluster.Node == nil
}

// watchNode builds the watcher of the API server's Node when the agent
// admits against it.
func (p *Provider) watchNode() error {
	if !p.watchesNode() {
		return nil
	}
	var err error
	p.nodes, err = apiserver.NewNodeWatcher(p.opts.Client, apiserver.NodeWatcherOptions{NodeName: p.agent.NodeName(),
		Logger: p.log.With("component", "api-node")})
	if err != nil {
		return fmt.Errorf("new provider: %w", err)
	}
	return nil
}

// Agent returns the agent that runs the pods: its PodStatuses, NodeStatus,
// FakeRuntime (the embedded fake runtime, for a test to script) and the
// rest.
func (p *Provider) Agent() *agent.Agent { return p.agent }

// Run runs the agent and what feeds it until ctx ends: the desired pods to
// the agent, the agent's pod and node statuses to VK's callbacks, and, with
// Options.Client, the API server's volume sources, services, events and
// the watch of the Node pods are admitted against;
// with the agent's embedded fake runtime (and no Agent.HTTP.API, which serves
// it), the fake runtime's streaming server for exec, attach and
// port-forward. When one part fails, Run ends the others. It returns once
// every goroutine it started, and every stream of a kubelet API request,
// has ended (but for a NotifyNodeStatus callback blocked for good, which
// it abandons), with the first error (nil when ctx ended). Run may be
// called once. Containers are left running, as a kubelet restart leaves
// them.
func (p *Provider) Run(ctx context.Context) error {
	if !p.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("run: already run: %w", ErrNotRunning)
	}
	defer close(p.stopped)
	defer p.requests.Wait()
	defer p.end()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.recorder != nil {
		defer p.recorder.Start(p.opts.Client, p.agent.NodeName())()
	}
	// Attached before the agent starts, so that its Exec works once it
	// is ready.
	var streaming *fake.StreamingServer
	if rt := p.agent.FakeRuntime(); rt != nil && p.opts.Agent.HTTP.API == nil {
		var err error
		if streaming, err = streamingServer(rt); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			defer cancel()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("run: %s: %w", name, err)
				}
				mu.Unlock()
			}
		})
	}
	if streaming != nil {
		run("fake runtime streaming", streaming.Run)
	}
	run("agent", p.agent.Run)
	run("pod feed", p.feed)
	run("pod statuses", p.runNotifier)
	run("node status", p.runNodeNotifier)
	if p.volumes != nil {
		run("volume sources", p.volumes.Run)
	}
	if p.services != nil {
		run("services", p.services.Run)
	}
	if p.nodes != nil {
		run("node watch", p.nodes.Run)
	}
	wg.Wait()
	return first
}

// streamingServer attaches a streaming server on a loopback port to the
// fake runtime, whose Exec, Attach and PortForward return URLs on it from
// then on; nil when one is attached already.
func streamingServer(rt *fake.Runtime) (*fake.StreamingServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake runtime streaming: %w", err)
	}
	srv, err := fake.NewStreamingServer(rt, fake.StreamingOptions{Listener: l})
	if err != nil {
		l.Close()
		if errors.Is(err, fake.ErrStreamingAttached) {
			return nil, nil
		}
		return nil, fmt.Errorf("fake runtime streaming: %w", err)
	}
	return srv, nil
}

// NewProviderFunc returns a nodeutil.NewProviderFunc for nodeutil.NewNode
// that builds a Provider with opts, taking from VK's ProviderConfig the
// Node (Options.Node; the agent's NodeName when empty) and the pod lister
// (Options.Pods) unless opts sets them, and hands it to built (which may
// be nil), for the caller to Run beside the node:
//
//	var p *vkprovider.Provider
//	n, err := nodeutil.NewNode(name, vkprovider.NewProviderFunc(opts, func(b *vkprovider.Provider) { p = b }),
//		nodeutil.WithClient(client), func(c *nodeutil.NodeConfig) error { c.SkipDownwardAPIResolution = true; return nil })
//	// run p.Run(ctx) and n.Run(ctx) side by side
//
// The Provider is VK's node provider too: the Node's status is the agent's.
func NewProviderFunc(opts Options, built func(*Provider)) nodeutil.NewProviderFunc {
	return func(cfg nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		if opts.Node == nil {
			opts.Node = cfg.Node
		}
		if opts.Pods == nil {
			opts.Pods = cfg.Pods
		}
		p, err := New(opts)
		if err != nil {
			return nil, nil, err
		}
		if built != nil {
			built(p)
		}
		return p, p, nil
	}
}
