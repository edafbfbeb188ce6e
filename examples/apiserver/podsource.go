package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// PodSourceOptions configure a PodSource. Every field is optional.
type PodSourceOptions struct {
	// Logger receives the source's logs; nil discards them.
	Logger *slog.Logger
	// Clock drives the reflector's backoff between a failed or ended
	// watch and the next; nil means the real clock.
	Clock clock.Clock
	// Backoff is the reflector's backoff between a failed or ended list or
	// watch and the next; nil means client-go's default (800ms doubling to
	// 30s, with jitter).
	Backoff *wait.Backoff
	// ListerWatcher replaces the list and watch of pods through the client
	// (a test's fake watcher, a cached client). It must apply the
	// spec.nodeName field selector itself.
	ListerWatcher cache.ListerWatcher
}

// PodSource is the API-server pod source: a reflector lists and watches the
// pods bound to the node (field selector spec.nodeName=<node>) and, after
// the initial list and after every change, sends the complete list as a
// syncloop.OpSet with Source syncloop.SourceAPI, as upstream's apiserver
// source does through an UndeltaStore. The merger (source.Config) turns the
// SETs into ADD, UPDATE, DELETE, REMOVE and RECONCILE, and the first SET
// marks the source ready.
//
// When a watch ends (expiry, an API-server restart) the reflector watches
// again from the last resource version it saw, or lists again if that
// version is gone; a relist replaces the whole list, so a pod deleted while
// the watch was down disappears from the next SET and nothing is duplicated.
type PodSource struct {
	nodeName string
	out      chan<- syncloop.PodUpdate
	log      *slog.Logger
	lw       cache.ListerWatcher
	clock    clock.Clock
	backoff  *wait.Backoff

	mu   sync.Mutex
	sent int
}

// NewPodSource returns the source of the pods bound to nodeName, sending on
// out (typically source.Config.Channel(ctx, syncloop.SourceAPI)). client is
// required unless opts.ListerWatcher is set. It starts nothing: call Run.
func NewPodSource(client kubernetes.Interface, nodeName string, out chan<- syncloop.PodUpdate, opts PodSourceOptions) (*PodSource, error) {
	if nodeName == "" {
		return nil, fmt.Errorf("new pod source: node name is empty: %w", ErrInvalidArgument)
	}
	if out == nil {
		return nil, fmt.Errorf("new pod source: output channel is nil: %w", ErrInvalidArgument)
	}
	lw := opts.ListerWatcher
	if lw == nil {
		if client == nil {
			return nil, fmt.Errorf("new pod source: client is nil: %w", ErrInvalidArgument)
		}
		lw = NodePodsListWatch(client, nodeName)
	}
	return &PodSource{
		nodeName: nodeName,
		out:      out,
		log:      orDiscard(opts.Logger).With("node", nodeName),
		lw:       lw,
		clock:    orClock(opts.Clock),
		backoff:  opts.Backoff,
	}, nil
}

// NodePodsListWatch lists and watches the pods of every namespace with
// spec.nodeName=nodeName, as upstream's apiserver source does.
func NodePodsListWatch(client kubernetes.Interface, nodeName string) cache.ListerWatcher {
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	// A fake clientset says it cannot stream the initial list (WatchList):
	// the reflector then lists.
	return cache.ToListWatcherWithWatchListSemantics(lw, client)
}

// Run lists and watches until ctx ends, sending a SET after the initial
// list and after every change, and returns nil once the reflector has
// stopped. A send waits for the receiver or for ctx.
func (s *PodSource) Run(ctx context.Context) error {
	store := cache.NewUndeltaStore(func(objs []interface{}) { s.push(ctx, objs) }, cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(s.lw, &v1.Pod{}, store, cache.ReflectorOptions{
		Name:    "apiserver pod source " + s.nodeName,
		Clock:   s.clock,
		Backoff: s.backoff,
	})
	s.log.Info("watching pods bound to the node")
	r.RunWithContext(ctx)
	return nil
}

// Sent returns how many SETs the source has sent.
func (s *PodSource) Sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *PodSource) push(ctx context.Context, objs []interface{}) {
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			pods = append(pods, p)
		}
	}
	select {
	case s.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: pods}:
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
	case <-ctx.Done():
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
