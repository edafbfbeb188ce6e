package nodetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Options configure a Node.
type Options struct {
	// Node are the agenttest node's options. NewNode sets
	// Node.Agent.Cluster.Updates and StatusSink (the fake clientset's pods)
	// and, unless the test gives one, Recorder (events created in the fake
	// API server); the rest is agenttest's, its defaults included (node
	// name "node1").
	Node agenttest.Options
	// Objects are in the fake API server from the start (pods are admitted
	// as Create admits them).
	Objects []runtime.Object
	// Scheme is the controller-runtime client's; nil means client-go's
	// (the built-in kinds).
	Scheme *runtime.Scheme
}

// Node is an agenttest node whose pods live in a fake API server that a
// client-go clientset and a controller-runtime client share, with watches.
// Its methods must be called from the test's goroutine; the clients are
// safe for concurrent use.
type Node struct {
	// Node is the node: Step, StepUntil, Settle, Runtime, Events, PodEvents,
	// Hooks, ExecCalls. Its in-memory API server's methods (AddPod, Pod,
	// Pods, PodReady, DeletePod, UpdatePod, SetPodCondition, Resend) fail
	// the test: use Node's own or the clients.
	*agenttest.Node
	// Clientset is the fake API server as a client-go kubernetes.Interface.
	Clientset *k8sfake.Clientset
	// Client is the same API server as a controller-runtime client.
	Client client.WithWatch
	// Informers are shared informers on Clientset, started by Start.
	Informers informers.SharedInformerFactory

	t      testing.TB
	ctx    context.Context // the pod source's and the informers'
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// The runnables', which stop before the node.
	rctx    context.Context
	rcancel context.CancelFunc
	rwg     sync.WaitGroup
}

// NewNode starts a node for the test, which must run inside synctest.Test,
// with its pods in a fake API server, and stops everything it started when
// the test ends. It returns once the node has started and settled.
func NewNode(t testing.TB, opts Options) *Node {
	t.Helper()
	if opts.Node.Agent.NodeName == "" {
		opts.Node.Agent.NodeName = "node1"
	}
	nodeName := opts.Node.Agent.NodeName
	adm := &admission{nodeName: nodeName}
	objs := make([]runtime.Object, len(opts.Objects))
	for i, o := range opts.Objects {
		objs[i] = o.DeepCopyObject() // the test's stay as they are
		if p, ok := objs[i].(*v1.Pod); ok {
			adm.admit(p)
		}
	}
	cs := k8sfake.NewClientset(objs...)
	api := &fakeAPI{tracker: cs.Tracker(), admission: adm}
	api.install(cs)
	sch := opts.Scheme
	if sch == nil {
		sch = scheme.Scheme
	}
	cl := crfake.NewClientBuilder().WithScheme(sch).WithObjectTracker(cs.Tracker()).
		WithInterceptorFuncs(api.interceptors()).Build()

	// The pods reach the agent as they reach a joined node: a reflector's
	// complete list after every change.
	updates := make(chan syncloop.PodUpdate)
	src, err := apiserver.NewPodSource(cs, nodeName, updates, apiserver.PodSourceOptions{})
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	sink, err := apiserver.NewStatusSink(cs, apiserver.StatusSinkOptions{})
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	n := &Node{Clientset: cs, Client: cl, Informers: informers.NewSharedInformerFactory(cs, 0), t: t}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.rctx, n.rcancel = context.WithCancel(context.Background())
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := src.Run(n.ctx); err != nil {
			t.Errorf("nodetest: the pod source stopped: %v", err)
		}
	}()
	// The node's events go to the fake API server too, through client-go's
	// broadcaster as a joined node's do (agenttest keeps them as well).
	rec, stopRec := apiserver.NewRecorder(cs, nodeName)
	// Registered before the node's own: it runs after the node has
	// stopped.
	t.Cleanup(func() {
		stopRec()
		n.cancel()
		n.Informers.Shutdown()
		n.wg.Wait()
	})
	o := opts.Node
	o.Agent.Cluster.Updates, o.Agent.Cluster.StatusSink = updates, sink
	if o.Agent.Cluster.Recorder == nil {
		o.Agent.Cluster.Recorder = rec
	}
	n.Node = agenttest.NewNode(t, o)
	// Registered after the node's: controllers stop before the node.
	t.Cleanup(n.stopRunnables)
	return n
}

// Runnable is what Start runs: a controller-runtime controller, a manager's
// runnable, anything whose Start blocks until ctx ends.
type Runnable interface {
	Start(ctx context.Context) error
}

// Start starts the informers requested so far from Informers, and r (nil:
// none) in a goroutine of the test's bubble. When the test ends, r stops
// before the node, the informers after it. Start settles the node before
// it returns, so that the informers have listed and r has started.
func (n *Node) Start(r Runnable) {
	n.t.Helper()
	n.Informers.Start(n.ctx.Done())
	if r != nil {
		n.rwg.Add(1)
		go func() {
			defer n.rwg.Done()
			if err := r.Start(n.rctx); err != nil {
				n.t.Errorf("nodetest: %T stopped: %v", r, err)
			}
		}()
	}
	n.Settle()
}

// CreatePod creates pod through Clientset (in the default namespace when
// it names none), admitted as NewNode says, and settles the node. It
// returns the pod as stored.
func (n *Node) CreatePod(pod *v1.Pod) *v1.Pod {
	n.t.Helper()
	p := pod.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	got, err := n.Clientset.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		n.t.Fatalf("nodetest: create pod: %v", err)
	}
	n.Settle()
	return n.Pod(got.Namespace, got.Name)
}

// Pod returns the pod of that namespace and name as the fake API server
// holds it, with the status the node last wrote, or nil when there is none.
func (n *Node) Pod(namespace, name string) *v1.Pod {
	n.t.Helper()
	p, err := n.Clientset.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), namespace, name)
	if err != nil {
		return nil
	}
	return p.(*v1.Pod).DeepCopy()
}

// PodReady reports whether the pod's Ready condition is True in the fake
// API server; false when there is no such pod.
func (n *Node) PodReady(namespace, name string) bool {
	n.t.Helper()
	return agenttest.IsReady(n.Pod(namespace, name))
}

// stopRunnables stops what Start started and waits for it.
func (n *Node) stopRunnables() {
	n.rcancel()
	n.rwg.Wait()
}

// admission admits a pod as the API server and a one-node scheduler would:
// a name for a generateName, a UID, a creation time, the API server's
// defaults, and the node's name.
type admission struct {
	nodeName string
	mu       sync.Mutex
	seq      int
}

func (a *admission) admit(p *v1.Pod) {
	a.mu.Lock()
	a.seq++
	seq := a.seq
	a.mu.Unlock()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if p.Name == "" && p.GenerateName != "" {
		// Deterministic, unlike the API server's random suffix.
		p.Name = fmt.Sprintf("%s%05d", p.GenerateName, seq)
	}
	if p.UID == "" {
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", seq))
	}
	if p.CreationTimestamp.IsZero() {
		// The bubble's time, which the node keeps in step with its clock.
		p.CreationTimestamp = metav1.NewTime(time.Now())
	}
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = a.nodeName
	}
	validation.DefaultPod(p)
}
