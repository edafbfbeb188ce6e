package envnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// ErrInvalidArgument is wrapped by the errors of Start and NewBinder for an
// argument they cannot use: a missing rest.Config, client or node name, a
// negative period.
var ErrInvalidArgument = errors.New("invalid argument")

// Options configure a Node. The zero value is a node with a generated name
// that runs pods on an embedded fake runtime with upstream's timings and
// binds the pods that fit it.
type Options struct {
	// Name is the Node's name, lower-cased. "" means "envnode-" and five
	// random characters, so that nodes started side by side, in one test
	// or in parallel tests on one API server, never share a Node.
	Name string
	// Labels are added to the Node when it is registered, beside
	// kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch.
	Labels map[string]string
	// NoBinder leaves the pods without a node to someone else (a scheduler
	// of the test's own, or another node): the node then runs only the
	// pods bound to it. By default a Binder binds to the node the pods
	// that fit it, as envtest runs no scheduler.
	NoBinder bool
	// NoConditionTaints leaves the Node's NoSchedule condition taints to a
	// node lifecycle controller (kube-controller-manager's). By default
	// the node keeps them in step with its conditions itself
	// (ConditionTaints): envtest runs no controller-manager, and the
	// node.kubernetes.io/not-ready taint the API server puts on every new
	// Node would otherwise stay, and keep every pod off it.
	NoConditionTaints bool
	// Binder configures the binder: the scheduler name it answers to
	// (default-scheduler), its retry period and logger (Logger when nil).
	Binder BinderOptions
	// Agent are the kubelet's options. Start sets NodeName and what
	// apiserver.Joined.Apply sets (Cluster: the pod source, the status
	// sinks, the lease, events, volume sources, services), and always
	// Security.NoMounts; it fills in, where they are zero:
	//
	//	Runtime        an embedded fake runtime, agent.NewFakeRuntime
	//	               (Node.Runtime returns it; Stop closes it)
	//	RootDir        a temporary directory, removed by Stop
	//	Node.Machine   4 CPUs, 8Gi of memory, 110 pods, this host's
	//	               system information
	//	Eviction.Stats a node that measures nothing, so that the test
	//	               machine's disk or memory never evicts a pod
	//	Logger         Logger
	//
	// Timings are upstream's unless set: FastTimings divides them by ten.
	Agent agent.Options
	// Logger receives the logs of the node's API adapters and binder, and
	// the agent's when Agent.Logger is nil; nil discards them.
	Logger *slog.Logger
}

// FastTimings returns the agent's periods divided by ten: relist 100ms,
// housekeeping 200ms, node status 1s (an unchanged one pushed every 30s),
// container and image back-off 1s
// doubling to 30s, retry of a failed sync 1s, resync 6s, configMap and
// secret refresh 6s, manifest reread 2s, image garbage collection 30s. The
// states and reasons a controller sees are upstream's (CrashLoopBackOff,
// ImagePullBackOff, restart counts); only their pace changes, and the node
// uses more CPU to relist. Set Options.Agent.Timings to it.
func FastTimings() agent.Timings {
	return agent.Timings{
		RelistPeriod:     100 * time.Millisecond,
		SourcePeriod:     2 * time.Second,
		BackoffInitial:   time.Second,
		BackoffMax:       30 * time.Second,
		WorkerBackOff:    time.Second,
		Resync:           6 * time.Second,
		Housekeeping:     200 * time.Millisecond,
		NodeStatus:       time.Second,
		NodeStatusReport: 30 * time.Second,
		VolumeRefresh:    6 * time.Second,
		ImageGC:          30 * time.Second,
	}
}

// Node is a kubelet joined to an API server, running its pods on a fake
// (or given) runtime. Start one with Start; Stop ends it.
type Node struct {
	name    string
	agent   *agent.Agent
	rt      *fake.Runtime // the runtime, when it is a fake
	ownRT   bool          // rt is embedded: Stop closes it
	tempDir string        // the root directory Start made, or ""
	http    *http.Client

	cancel context.CancelFunc
	done   chan struct{} // closed once every goroutine has ended
	err    error         // the errors the node's parts ended with; read after done

	stopOnce sync.Once
}

// Start registers a Node named opts.Name on the API server cfg points at
// (with any credentials that may register a node and bind pods, such as
// envtest's admin config) and runs for it a kubelet (package agent, joined
// with examples/apiserver.Join), the upkeep of its condition taints
// (unless opts.NoConditionTaints) and a Binder (unless opts.NoBinder). It
// returns once the Node is Ready in the API server and its condition
// taints are in step (none, when Ready). An API server that does not
// answer, or that refuses the node's access, fails Start at once (a
// test's server is up before the test). ctx bounds that wait only; the
// node runs until Stop. An error from any part, or ctx ending first, stops
// what started and is returned.
//
// The client Start makes from cfg allows upstream kubelet's 50 queries per
// second (burst 100) when cfg sets no limit.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Node, error) {
	if cfg == nil {
		return nil, fmt.Errorf("start node: rest config is nil: %w", ErrInvalidArgument)
	}
	name := strings.ToLower(strings.TrimSpace(opts.Name))
	if name == "" {
		name = "envnode-" + rand.String(5)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	client, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	// A kubelet started while its API server does not answer waits for
	// it (examples/apiserver.Joined.Run); a test's server is up before the
	// test, so one that does not answer, or refuses the node's access,
	// fails Start at once.
	if err := apiserver.CheckAccess(ctx, client, name); err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	n := &Node{name: name, http: hc, done: make(chan struct{})}
	run, err := n.build(client, opts)
	if err != nil {
		n.cleanup()
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		n.err = run(runCtx)
	}()
	if err := n.waitReady(ctx, client, !opts.NoConditionTaints); err != nil {
		if runErr := n.Stop(); runErr != nil {
			err = runErr // why the node stopped before it was Ready
		}
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	return n, nil
}

// build makes the agent, its adapters and the binder, and returns what runs
// them all.
func (n *Node) build(client kubernetes.Interface, opts Options) (func(context.Context) error, error) {
	log := orDiscard(opts.Logger)
	o := opts.Agent
	o.NodeName = n.name
	o.Security.NoMounts = true
	if o.Logger == nil {
		o.Logger = opts.Logger
	}
	if o.RootDir == "" {
		dir, err := os.MkdirTemp("", "envnode-"+n.name+"-")
		if err != nil {
			return nil, err
		}
		o.RootDir, n.tempDir = dir, dir
	}
	if o.Node.Machine == nil {
		o.Node.Machine = machine{}
	}
	if o.Eviction.Stats == nil {
		o.Eviction.Stats = &evictiontest.Stats{}
	}
	if o.Runtime == nil {
		n.rt = agent.NewFakeRuntime(nil, o.Logger)
		n.ownRT = true
		o.Runtime = n.rt
	} else if rt, ok := o.Runtime.(*fake.Runtime); ok {
		n.rt = rt
	}
	joined, err := apiserver.Join(client, n.name, apiserver.JoinOptions{NodeLabels: opts.Labels, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := joined.Apply(&o); err != nil {
		return nil, err
	}
	if n.agent, err = agent.New(o); err != nil {
		return nil, err
	}
	var binder *Binder
	if !opts.NoBinder {
		bo := opts.Binder
		if bo.Logger == nil {
			bo.Logger = log.With("component", "binder")
		}
		if binder, err = NewBinder(client, n.name, bo); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		part := func(f func(context.Context) error) {
			wg.Go(func() {
				defer cancel() // one part ending ends the node
				if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		part(func(ctx context.Context) error { return joined.Run(ctx, n.agent) })
		if !opts.NoConditionTaints {
			part(func(ctx context.Context) error {
				return keepConditionTaints(ctx, client, n.name, log.With("component", "condition-taints", "node", n.name))
			})
		}
		if binder != nil {
			part(binder.Run)
		}
		wg.Wait()
		return errors.Join(errs...)
	}, nil
}

// waitReady waits until the API server has the Node with Ready True (and,
// with taints, its condition taints in step: none), the node stops, or
// ctx ends.
func (n *Node) waitReady(ctx context.Context, client kubernetes.Interface, taints bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-n.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	done := func(nd *v1.Node) bool {
		if !nodeReady(nd) {
			return false
		}
		_, changed := withConditionTaints(nd)
		return !taints || !changed
	}
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", n.name).String()}
	for {
		// List, then watch from there until the watch ends; a failure
		// is tried again 100ms later. (Not a reflector: its back-off
		// after a failure does not end with ctx.)
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err == nil {
			if len(list.Items) == 1 && done(&list.Items[0]) {
				return nil
			}
			w := opts
			w.ResourceVersion = list.ResourceVersion
			var watcher watch.Interface
			if watcher, err = client.CoreV1().Nodes().Watch(ctx, w); err == nil {
				for e := range watcher.ResultChan() {
					if nd, ok := e.Object.(*v1.Node); ok && e.Type != watch.Deleted && done(nd) {
						watcher.Stop()
						return nil
					}
				}
				watcher.Stop()
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for the Node to be Ready: %w (last error: %v)", ctx.Err(), err)
		}
		if err != nil {
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

func nodeReady(nd *v1.Node) bool {
	for _, c := range nd.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Name returns the Node's name.
func (n *Node) Name() string { return n.name }

// Agent returns the node's kubelet, to read what it runs (PodStatuses,
// NodeStatus).
func (n *Node) Agent() *agent.Agent { return n.agent }

// Runtime returns the node's fake runtime, to script what containers do
// (SetRules), what exec probes and hooks answer (SetExecRules), pulls that
// fail (SetPullBehavior) and faults (InjectFault), and to read the calls the
// kubelet made (CallsOf). It is nil when Options.Agent.Runtime is not a
// *fake.Runtime.
func (n *Node) Runtime() *fake.Runtime { return n.rt }

// Stop stops the node and returns once every goroutine it started has
// ended: the kubelet, its watches, the event recorder and the binder. It
// then closes the embedded fake runtime, removes the temporary root
// directory and closes the client's idle connections. The Node, its Lease
// and its pods stay in the API server, as when a kubelet stops; their
// statuses no longer change. Stop returns the first error a part of the
// node ended with (nil when all ran until Stop), and may be called more
// than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		n.cancel()
		<-n.done
		n.cleanup()
	})
	<-n.done
	return n.err
}

// cleanup releases what build made.
func (n *Node) cleanup() {
	if n.ownRT {
		n.rt.Close()
	}
	if n.tempDir != "" {
		if err := os.RemoveAll(n.tempDir); err != nil && n.err == nil {
			n.err = fmt.Errorf("stop node %s: %w", n.name, err)
		}
	}
	n.http.CloseIdleConnections()
}

// machine is a node of 4 CPUs, 8Gi of memory and 110 pods, whatever the
// test machine has, with this host's system information.
type machine struct{ node.LocalMachine }

var _ node.Machine = machine{}

// Capacity implements node.Machine.
func (machine) Capacity(context.Context) (v1.ResourceList, error) {
	return v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods:   *resource.NewQuantity(node.DefaultMaxPods, resource.DecimalSI),
	}, nil
}
