package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/localstate"
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
	// LocalState, when set, keeps every list the source sends (the pods
	// as the API server last sent them) and serves the kept pods when the
	// API server does not answer at start: see PodSource.
	LocalState *localstate.State
	// LocalStateAfter is how long the first list may take before the
	// source serves LocalState's pods (a list that fails does so at
	// once); 0 means DefaultLocalStateAfter.
	LocalStateAfter time.Duration
}

// DefaultLocalStateAfter is how long a pod source with a local state waits
// for the API server's first list before it serves the kept pods.
const DefaultLocalStateAfter = 10 * time.Second

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
//
// With a LocalState, every SET is written to it before it is sent (only
// the pods that changed; a failed write is logged and the SET still sent),
// and the tokens of pods no longer bound are forgotten. When the first
// list fails, or has not succeeded within LocalStateAfter, the source
// sends the kept pods as its SET instead (unless it keeps none: an empty
// SET would let housekeeping kill whatever the node runs): the merger
// marks the API source ready, and the agent adopts, restarts, probes and
// mounts those pods as if the API server had listed them. FromLocalState
// says so until the API server answers; its first list then replaces the
// kept pods whole, which the merger turns into the differences (pods
// deleted meanwhile are removed and terminated with their grace period,
// new ones added).
type PodSource struct {
	nodeName string
	out      chan<- syncloop.PodUpdate
	log      *slog.Logger
	lw       cache.ListerWatcher
	clock    clock.Clock
	backoff  *wait.Backoff
	state    *localstate.State
	after    time.Duration

	listFailed chan struct{} // one token: the first list or watch failed
	listedCh   chan struct{} // closed after the first SET from the API server

	sendMu     sync.Mutex // orders the local state's SET before the API server's
	failLogged atomic.Bool
	mu         sync.Mutex
	sent       int
	listed     bool
	local      localServing
}

// localServing is what the source served from its local state.
type localServing struct {
	on    bool
	pods  int
	since time.Time
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
	after := opts.LocalStateAfter
	if after < 0 {
		return nil, fmt.Errorf("new pod source: LocalStateAfter %s is negative: %w", after, ErrInvalidArgument)
	}
	if after == 0 {
		after = DefaultLocalStateAfter
	}
	s := &PodSource{
		nodeName:   nodeName,
		out:        out,
		log:        orDiscard(opts.Logger).With("node", nodeName),
		lw:         lw,
		clock:      orClock(opts.Clock),
		backoff:    opts.Backoff,
		state:      opts.LocalState,
		after:      after,
		listFailed: make(chan struct{}, 1),
		listedCh:   make(chan struct{}),
	}
	if s.state != nil {
		s.lw = &observedListerWatcher{inner: lw, failed: s.noteListFailure}
	}
	return s, nil
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
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.state != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // before wg.Wait
		wg.Go(func() { s.serveLocalState(ctx) })
	}
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

// Listed returns a channel closed once the source has sent the API
// server's first list.
func (s *PodSource) Listed() <-chan struct{} { return s.listedCh }

// FromLocalState reports whether the source serves the pods of its local
// state because the API server has not answered since the start, how many,
// and since when.
func (s *PodSource) FromLocalState() (on bool, pods int, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.local.on, s.local.pods, s.local.since
}

func (s *PodSource) push(ctx context.Context, objs []interface{}) {
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			pods = append(pods, p)
		}
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.state != nil {
		s.keep(pods)
	}
	s.mu.Lock()
	first, wasLocal := !s.listed, s.local.on
	s.listed, s.local.on = true, false
	s.mu.Unlock()
	if first {
		close(s.listedCh)
		if wasLocal {
			s.log.Info("the API server answered: its list replaces the pods of the local state", "pods", len(pods))
		}
	}
	s.send(ctx, s.reportedTerminal(pods))
}

// reportedTerminal gives the pods whose terminal status the local state
// keeps as unacknowledged that status (withReportedTerminal): the node
// saw them finish before a restart, and the copy the API server or the
// local state holds is older.
func (s *PodSource) reportedTerminal(pods []*v1.Pod) []*v1.Pod {
	if s.state == nil {
		return pods
	}
	kept, err := s.state.PodStatuses()
	if err != nil {
		s.log.Error("the local state holds statuses that cannot be read", "err", err)
	}
	reported := make(map[types.UID]*v1.PodStatus, len(kept))
	for _, k := range kept {
		reported[k.UID] = &k.Status
	}
	out := withReportedTerminal(pods, reported)
	for i := range out {
		if out[i] != pods[i] {
			s.log.Info("the pod finished before the restart, in a status the API server has not acknowledged: it is not run again",
				"pod", out[i].Namespace+"/"+out[i].Name, "uid", out[i].UID, "phase", out[i].Status.Phase)
		}
	}
	return out
}

func (s *PodSource) send(ctx context.Context, pods []*v1.Pod) {
	select {
	case s.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: pods}:
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
	case <-ctx.Done():
	}
}

// keep writes pods to the local state, and forgets the tokens of pods that
// are gone. A failure is logged: the agent runs on what the API server
// sent, and the local state is behind until the next write succeeds.
func (s *PodSource) keep(pods []*v1.Pod) {
	wrote, err := s.state.SetPods(pods)
	if err != nil {
		s.log.Error("cannot keep the pods in the local state", "err", err)
		return
	}
	if !wrote {
		return
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = true
	}
	if err := s.state.DeleteTokensOf(live); err != nil {
		s.log.Error("cannot forget the tokens of pods that are gone", "err", err)
	}
}

// noteListFailure is called by the lister-watcher when a list or watch
// fails; only failures before the first list count.
func (s *PodSource) noteListFailure(err error) {
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if listed {
		return
	}
	select {
	case s.listFailed <- struct{}{}:
	default:
	}
	if s.failLogged.CompareAndSwap(false, true) {
		s.log.Info("the API server does not answer the first list of pods", "err", err)
	}
}

// serveLocalState sends the local state's pods once when the first list
// fails or is late, unless the API server's list came first.
func (s *PodSource) serveLocalState(ctx context.Context) {
	timer := s.clock.NewTimer(s.after)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-s.listedCh:
		return
	case <-s.listFailed:
	case <-timer.C():
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if listed {
		return
	}
	pods, err := s.state.Pods()
	if err != nil {
		// Some kept pods did not decode; the others are served.
		s.log.Error("the local state holds pods that cannot be read", "err", err)
	}
	if len(pods) == 0 {
		// An empty SET would let housekeeping kill every container the
		// node runs; with nothing kept, wait for the API server as
		// upstream does.
		s.log.Warn("the API server does not answer and the local state holds no pods: waiting for the API server")
		return
	}
	s.mu.Lock()
	s.local = localServing{on: true, pods: len(pods), since: s.clock.Now()}
	s.mu.Unlock()
	s.log.Warn("the API server does not answer: serving the pods of the local state as the API source's", "pods", len(pods))
	s.send(ctx, s.reportedTerminal(pods))
}

// observedListerWatcher reports the failures of the lists and watches it
// passes on, and keeps what the inner one says of watch-list semantics.
type observedListerWatcher struct {
	inner  cache.ListerWatcher
	failed func(error)
}

var _ cache.ListerWatcherWithContext = (*observedListerWatcher)(nil)

func (o *observedListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

func (o *observedListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := cache.ToListerWatcherWithContext(o.inner).ListWithContext(ctx, opts)
	if err != nil {
		o.failed(err)
	}
	return obj, err
}

func (o *observedListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

func (o *observedListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := cache.ToListerWatcherWithContext(o.inner).WatchWithContext(ctx, opts)
	if err != nil {
		o.failed(err)
	}
	return w, err
}

// IsWatchListSemanticsUnSupported is the inner lister-watcher's answer
// (client-go asks it before it streams the initial list).
func (o *observedListerWatcher) IsWatchListSemanticsUnSupported() bool {
	u, ok := o.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
