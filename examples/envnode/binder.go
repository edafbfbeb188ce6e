package envnode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// BinderOptions configure a Binder. Every zero value is the documented
// default.
type BinderOptions struct {
	// SchedulerName selects the pods to bind: those whose
	// spec.schedulerName it is. "" means "default-scheduler", the name the
	// API server gives a pod that names none.
	SchedulerName string
	// RetryPeriod is how long after a binding failed (a pod that does not
	// fit is no failure) Run tries again; 0 means 1s.
	RetryPeriod time.Duration
	// Logger receives a line per pod bound, and per pod that does not fit
	// the node (at debug level, once per reason); nil discards them.
	Logger *slog.Logger
}

// Binder is a scheduler for one node and the pods that fit it: it binds
// each Pending pod (no node, the binder's scheduler name, no scheduling
// gates) that Fits its node to that node, with a pods/binding as a
// scheduler does; the API server then sets the pod's spec.nodeName and its
// PodScheduled condition. A pod that does not fit stays Pending; it is
// looked at again when it or the node changes (a label, a taint, a
// toleration).
//
// Binders of several nodes may watch one API server: each binds to its
// own node the pods that fit it, and the API server lets only the first
// binding of a pod succeed (the others get a Conflict, which the binder
// takes as done). Which node wins a pod that fits several is unspecified;
// a test that cares says so with a nodeSelector or spec.nodeName.
//
// Its methods are safe for concurrent use; Run may be called once.
type Binder struct {
	client   kubernetes.Interface
	nodeName string
	sched    string
	retry    time.Duration
	log      *slog.Logger
	ran      atomic.Bool

	mu sync.Mutex
	// bound are the pods bound here that a watch may still show pending.
	bound map[types.UID]struct{}
	// unfit is the last reason logged for a pod that does not fit.
	unfit map[types.UID]string
}

// NewBinder returns the binder of the node nodeName; it starts nothing. A
// missing client or node name is an error wrapping ErrInvalidArgument.
func NewBinder(client kubernetes.Interface, nodeName string, opts BinderOptions) (*Binder, error) {
	if client == nil {
		return nil, fmt.Errorf("new binder: client is nil: %w", ErrInvalidArgument)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("new binder: node name is empty: %w", ErrInvalidArgument)
	}
	if opts.RetryPeriod < 0 {
		return nil, fmt.Errorf("new binder %s: RetryPeriod %s is negative: %w", nodeName, opts.RetryPeriod, ErrInvalidArgument)
	}
	b := &Binder{client: client, nodeName: nodeName, sched: opts.SchedulerName, retry: opts.RetryPeriod, log: orDiscard(opts.Logger).With("node", nodeName),
		bound: map[types.UID]struct{}{}, unfit: map[types.UID]string{}}
	if b.sched == "" {
		b.sched = v1.DefaultSchedulerName
	}
	if b.retry == 0 {
		b.retry = time.Second
	}
	return b, nil
}

// BindPending reads the node and the pods without a node from the API
// server, and binds each pod that is Pending for the binder and Fits the
// node, oldest first. It returns how many it bound, and the failures of
// the others joined (a pod that does not fit, or that someone else bound
// or deleted meanwhile, is no failure). A node that is not registered is
// an error. Run does the same from its watches whenever something changes.
func (b *Binder) BindPending(ctx context.Context) (int, error) {
	node, err := b.client.CoreV1().Nodes().Get(ctx, b.nodeName, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("bind pending pods to %s: %w", b.nodeName, err)
	}
	list, err := b.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: pendingSelector()})
	if err != nil {
		return 0, fmt.Errorf("bind pending pods to %s: %w", b.nodeName, err)
	}
	pods := make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return b.bindAll(ctx, pods, node)
}

// Run watches the node and the pods without a node, and binds the pods
// that are Pending for the binder and fit the node whenever either
// changes; after a failed binding it tries again RetryPeriod later. It
// returns nil once ctx has ended and its watches have stopped.
func (b *Binder) Run(ctx context.Context) error {
	if !b.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("run binder %s: already run: %w", b.nodeName, ErrInvalidArgument)
	}
	kick := make(chan struct{}, 1)
	changed := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	}
	pods, podWatch := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: pendingPodsListWatch(b.client), ObjectType: &v1.Pod{}, Handler: handler,
	})
	nodes, nodeWatch := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: nodeListWatch(b.client, b.nodeName), ObjectType: &v1.Node{}, Handler: handler,
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { podWatch.RunWithContext(ctx) })
	wg.Go(func() { nodeWatch.RunWithContext(ctx) })
	b.log.Info("binding pending pods", "scheduler", b.sched)
	// Each object of the initial lists is a change: a pass may see some
	// of the pods, and the next one more (never the store being synced,
	// which would need polling).
	retry := time.NewTimer(b.retry)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-retry.C:
		}
		obj, ok, err := nodes.GetByKey(b.nodeName)
		if err != nil || !ok {
			continue // not registered yet: its creation is a change
		}
		node := obj.(*v1.Node)
		objs := pods.List()
		pending := make([]*v1.Pod, 0, len(objs))
		for _, o := range objs {
			pending = append(pending, o.(*v1.Pod))
		}
		if _, err := b.bindAll(ctx, pending, node); err != nil && ctx.Err() == nil {
			b.log.Warn("Cannot bind pods; trying again", "in", b.retry, "err", err)
			retry.Reset(b.retry)
		}
	}
}

// bindAll binds to node each of pods that is Pending for the binder and
// fits it, oldest first, and forgets the pods it bound that are no longer
// among pods.
func (b *Binder) bindAll(ctx context.Context, pods []*v1.Pod, node *v1.Node) (int, error) {
	slices.SortFunc(pods, func(x, y *v1.Pod) int {
		if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	b.forgetAllBut(pods)
	var (
		n    int
		errs []error
	)
	for _, pod := range pods {
		if !Pending(pod, b.sched) || b.wasBound(pod.UID) {
			continue
		}
		if err := Fits(pod, node); err != nil {
			b.logUnfit(pod, err)
			continue
		}
		switch err := b.bind(ctx, pod, node.Name); {
		case err == nil:
			n++
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Bound elsewhere, recreated, or deleted: the watch will say.
			b.log.Debug("Pod not bound: it changed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		default:
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// bind creates pod's binding to nodeName, with pod's UID as precondition.
func (b *Binder) bind(ctx context.Context, pod *v1.Pod, nodeName string) error {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, nodeName, err)
	}
	b.mu.Lock()
	b.bound[pod.UID] = struct{}{}
	delete(b.unfit, pod.UID)
	b.mu.Unlock()
	b.log.Info("Bound pod", "pod", pod.Namespace+"/"+pod.Name)
	return nil
}

func (b *Binder) wasBound(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.bound[uid]
	return ok
}

// forgetAllBut forgets the pods bound or found unfit that are not among
// pods: the watch no longer shows them.
func (b *Binder) forgetAllBut(pods []*v1.Pod) {
	keep := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid := range b.bound {
		if !keep[uid] {
			delete(b.bound, uid)
		}
	}
	for uid := range b.unfit {
		if !keep[uid] {
			delete(b.unfit, uid)
		}
	}
}

// logUnfit logs that pod does not fit, once per reason.
func (b *Binder) logUnfit(pod *v1.Pod, err error) {
	b.mu.Lock()
	same := b.unfit[pod.UID] == err.Error()
	b.unfit[pod.UID] = err.Error()
	b.mu.Unlock()
	if !same {
		b.log.Debug("Pod does not fit the node", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
