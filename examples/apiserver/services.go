package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/localstate"
)

// ErrServicesNotSynced is what Services.ListServices returns until the
// first list from the API server has arrived; its text is upstream's.
var ErrServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// ServicesOptions configure Services. Every zero value is the default.
type ServicesOptions struct {
	// ListerWatcher replaces the client's list and watch of every
	// namespace's services (tests).
	ListerWatcher cache.ListerWatcher
	// Logger (nil: discard).
	Logger *slog.Logger
	// Clock drives the reflector's back-off (nil: the real clock).
	Clock clock.Clock
	// LocalState, when set, keeps the services listed and serves the
	// kept ones until the first list of a restarted node: containers then
	// get their service environment variables, and are created at all,
	// while the API server does not answer.
	LocalState *localstate.State
}

// Services keeps the cluster's services, listed and watched in every
// namespace as upstream's kubelet does, for the service environment
// variables of containers: it is a containerconfig.ServiceLister.
type Services struct {
	lw    cache.ListerWatcher
	store *listedStore
	log   *slog.Logger
	clock clock.Clock
	r     *cache.Reflector
	state *localstate.State

	keptLogged atomic.Bool
}

var _ containerconfig.ServiceLister = (*Services)(nil)

// NewServices returns the services of the API server client talks to.
// client is required unless opts.ListerWatcher is set. It starts nothing:
// call Run.
func NewServices(client kubernetes.Interface, opts ServicesOptions) (*Services, error) {
	lw := opts.ListerWatcher
	if lw == nil {
		if client == nil {
			return nil, fmt.Errorf("new services: client is nil: %w", ErrInvalidArgument)
		}
		lw = cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Services(metav1.NamespaceAll).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, o)
			},
		}, client)
	}
	s := &Services{lw: lw, store: &listedStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}, log: orDiscard(opts.Logger), clock: orClock(opts.Clock),
		state: opts.LocalState}
	if s.state != nil {
		s.store.changed = s.keep
	}
	s.r = cache.NewReflectorWithOptions(s.lw, &v1.Service{}, s.store, cache.ReflectorOptions{Name: "apiserver services", Clock: s.clock})
	return s, nil
}

// Run lists and watches the services until ctx ends, and returns nil once
// the reflector has stopped.
func (s *Services) Run(ctx context.Context) error {
	s.log.Info("watching services")
	s.r.RunWithContext(ctx)
	return nil
}

// ListServices returns the services, or ErrServicesNotSynced before the
// first list. With a LocalState that keeps services, it returns the kept
// ones before the first list. The services are shared: do not modify them.
func (s *Services) ListServices() ([]*v1.Service, error) {
	if !s.store.listed.Load() {
		return s.kept()
	}
	objs := s.store.List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*v1.Service); ok {
			out = append(out, svc)
		}
	}
	return out, nil
}

// kept returns the services of the local state, or ErrServicesNotSynced
// when there are none.
func (s *Services) kept() ([]*v1.Service, error) {
	if s.state == nil {
		return nil, ErrServicesNotSynced
	}
	svcs, err := s.state.Services()
	if err != nil {
		s.log.Error("the local state holds services that cannot be read", "err", err)
	}
	if len(svcs) == 0 {
		return nil, ErrServicesNotSynced
	}
	if s.keptLogged.CompareAndSwap(false, true) {
		s.log.Warn("the services have not been listed: the containers' environment comes from the services of the local state", "services", len(svcs))
	}
	return svcs, nil
}

// keep writes the listed services to the local state; a failure is
// logged.
func (s *Services) keep() {
	if !s.store.listed.Load() {
		return
	}
	objs := s.store.List()
	svcs := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*v1.Service); ok {
			svcs = append(svcs, svc)
		}
	}
	if _, err := s.state.SetServices(svcs); err != nil {
		s.log.Error("cannot keep the services in the local state", "err", err)
	}
}

// listedStore is a store that knows whether a reflector has filled it with
// a first list (a Replace), and calls changed after every change.
type listedStore struct {
	cache.Store
	listed  atomic.Bool
	changed func()
}

// Replace implements cache.Store.
func (s *listedStore) Replace(list []interface{}, resourceVersion string) error {
	err := s.Store.Replace(list, resourceVersion)
	if err == nil {
		s.listed.Store(true)
	}
	s.notify()
	return err
}

// Add implements cache.Store.
func (s *listedStore) Add(obj interface{}) error {
	defer s.notify()
	return s.Store.Add(obj)
}

// Update implements cache.Store.
func (s *listedStore) Update(obj interface{}) error {
	defer s.notify()
	return s.Store.Update(obj)
}

// Delete implements cache.Store.
func (s *listedStore) Delete(obj interface{}) error {
	defer s.notify()
	return s.Store.Delete(obj)
}

func (s *listedStore) notify() {
	if s.changed != nil {
		s.changed()
	}
}
