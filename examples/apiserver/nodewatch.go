package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
)

// NodeWatcherOptions configure a NodeWatcher.
type NodeWatcherOptions struct {
	// NodeName is the Node watched. Required.
	NodeName string
	// Logger receives the watcher's logs; nil discards them.
	Logger *slog.Logger
	// Clock times the reflector's back-off after a failed list or watch;
	// nil means the real clock.
	Clock clock.Clock
}

// NodeWatcher keeps the last Node the API server has for one node, from a
// watch of that Node alone (a field selector on its name), as upstream's
// kubelet admits pods against its node informer's copy: labels and taints
// that others set (a scheduler test labelling the node, then creating pods
// with a nodeSelector on that label) count as soon as the API server has
// them. It is an admission.NodeGetter, for agent.Options.Cluster.Node.
// Of two Nodes, the one of the newer resource version is kept. Safe for
// concurrent use.
type NodeWatcher struct {
	client   kubernetes.Interface
	nodeName string
	log      *slog.Logger
	clock    clock.Clock

	mu   sync.Mutex
	last *v1.Node
}

var _ admission.NodeGetter = (*NodeWatcher)(nil)

// NewNodeWatcher returns the watcher of the Node opts.NodeName; it starts
// nothing.
func NewNodeWatcher(client kubernetes.Interface, opts NodeWatcherOptions) (*NodeWatcher, error) {
	if client == nil {
		return nil, fmt.Errorf("new node watcher: client is nil: %w", ErrInvalidArgument)
	}
	if opts.NodeName == "" {
		return nil, fmt.Errorf("new node watcher: node name is empty: %w", ErrInvalidArgument)
	}
	return &NodeWatcher{client: client, nodeName: opts.NodeName, log: orDiscard(opts.Logger).With("node", opts.NodeName),
		clock: orClock(opts.Clock)}, nil
}

// Run lists and watches the Node, with a client-go reflector in the
// caller's goroutine, retrying with back-off while the API server fails,
// until ctx ends; it returns nil.
func (w *NodeWatcher) Run(ctx context.Context) error {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, w.nodeName).String()
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return w.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return w.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}, w.client)
	store := &nodeStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), w: w}
	r := cache.NewReflectorWithOptions(lw, &v1.Node{}, store, cache.ReflectorOptions{Name: "apiserver node " + w.nodeName, Clock: w.clock})
	w.log.Info("watching the node")
	r.RunWithContext(ctx)
	return nil
}

// Node returns a copy of the Node last seen, or an error before the first
// one.
func (w *NodeWatcher) Node() (*v1.Node, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return nil, fmt.Errorf("node %s: not read yet", w.nodeName)
	}
	return w.last.DeepCopy(), nil
}

// observe makes obj, a Node, the last Node unless the one kept is newer
// (a status update's read from the API server's cache may be older than
// the watch's latest event). Other objects and other Nodes are ignored.
func (w *NodeWatcher) observe(obj any) {
	nd, ok := obj.(*v1.Node)
	if !ok || nd.Name != w.nodeName {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && newerVersion(w.last.ResourceVersion, nd.ResourceVersion) {
		return
	}
	w.last = nd.DeepCopy()
}

// nodeStore is the watch's store: every Node it is given becomes the
// watcher's last Node.
type nodeStore struct {
	cache.Store
	w *NodeWatcher
}

func (n *nodeStore) Add(obj any) error {
	n.w.observe(obj)
	return n.Store.Add(obj)
}

func (n *nodeStore) Update(obj any) error {
	n.w.observe(obj)
	return n.Store.Update(obj)
}

func (n *nodeStore) Replace(list []any, rv string) error {
	for _, obj := range list {
		n.w.observe(obj)
	}
	return n.Store.Replace(list, rv)
}

// Watch keeps the Node that Node returns up to date from a NodeWatcher of
// this node's Node: labels and taints that others set count as soon as the
// API server has them, not at the next status update. It runs until ctx
// ends and returns nil. Without it, Node is the Node as each status update
// reads it.
func (s *NodeSink) Watch(ctx context.Context) error {
	return s.watcher.Run(ctx)
}

// newerVersion reports whether resource version a is newer than b. The
// API server's versions are opaque strings, but etcd's are increasing
// integers: when both parse, they are compared; otherwise the later
// arrival wins.
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}
