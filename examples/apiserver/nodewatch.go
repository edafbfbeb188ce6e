package apiserver

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Watch keeps the Node that Node returns up to date from a watch of this
// node's Node object (a field selector on its name), as upstream's kubelet
// admits pods against its node informer's copy: labels and taints that
// others set (a scheduler test labelling the node, then creating pods with
// a nodeSelector on that label) count as soon as the API server has them,
// not at the next status update. It runs until ctx ends and returns nil.
// Without it, Node is the Node as each status update reads it.
func (s *NodeSink) Watch(ctx context.Context) error {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, s.nodeName).String()
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return s.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return s.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}, s.client)
	store := &nodeStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), sink: s}
	r := cache.NewReflectorWithOptions(lw, &v1.Node{}, store, cache.ReflectorOptions{Name: "apiserver node " + s.nodeName, Clock: s.clock})
	s.log.Info("watching the node")
	r.RunWithContext(ctx)
	return nil
}

// nodeStore is the watch's store: every Node it is given becomes the
// sink's last Node.
type nodeStore struct {
	cache.Store
	sink *NodeSink
}

func (n *nodeStore) Add(obj any) error {
	n.sink.observe(obj)
	return n.Store.Add(obj)
}

func (n *nodeStore) Update(obj any) error {
	n.sink.observe(obj)
	return n.Store.Update(obj)
}

func (n *nodeStore) Replace(list []any, rv string) error {
	for _, obj := range list {
		n.sink.observe(obj)
	}
	return n.Store.Replace(list, rv)
}

// observe makes obj, a Node, the last Node unless the one kept is newer
// (a status update's read from the API server's cache may be older than
// the watch's latest event).
func (s *NodeSink) observe(obj any) {
	nd, ok := obj.(*v1.Node)
	if !ok || nd.Name != s.nodeName {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && newerVersion(s.last.ResourceVersion, nd.ResourceVersion) {
		return
	}
	s.last = nd.DeepCopy()
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
