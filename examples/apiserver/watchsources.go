package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/volume"
)

// Defaults of WatchingSourcesOptions.
const (
	// DefaultWatchIdle is how long an object nobody reads stays watched.
	DefaultWatchIdle = 5 * time.Minute
	// DefaultWatchSyncTimeout is how long a read waits for the first list
	// of its object (upstream's watch-based manager waits a second).
	DefaultWatchSyncTimeout = time.Second
)

// ErrNotRunning is wrapped by WatchingSources' errors when Run is not
// running.
var ErrNotRunning = errors.New("not running")

// WatchingSourcesOptions configure WatchingSources. Every field is
// optional.
type WatchingSourcesOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Clock drives the idle sweep, the sync timeout and the reflectors'
	// backoff; nil means the real clock.
	Clock clock.WithTicker
	// Idle is how long an object that nobody reads stays watched; 0 means
	// DefaultWatchIdle. The volume block re-reads the objects of its
	// volumes every minute, so an object in use is never idle.
	Idle time.Duration
	// SyncTimeout bounds how long a read waits for its object's first
	// list; 0 means DefaultWatchSyncTimeout.
	SyncTimeout time.Duration
	// Backoff is the reflectors' backoff after a failed list or watch;
	// nil means client-go's default.
	Backoff *wait.Backoff
}

// WatchingSources are the volume block's configMap and secret sources
// served from watches, as upstream's default (watch-based) managers: the
// first read of an object starts a reflector on that one object (field
// selector metadata.name=<name> in its namespace) and waits for its first
// list; later reads are served from the reflector's store, which the watch
// keeps current within moments of a change. Only objects that the node's
// pods read are watched, and an object nobody has read for Idle stops being
// watched. A missing object is NotFound (apierrors.IsNotFound). Tokens go
// through the TokenRequest API as with VolumeSources.
//
// Reads work while Run runs; Run stops every watch when its ctx ends. Safe
// for concurrent use.
type WatchingSources struct {
	client kubernetes.Interface
	o      WatchingSourcesOptions
	log    *slog.Logger

	mu     sync.Mutex
	runCtx context.Context // nil when Run is not running
	items  map[objectKey]*watchedObject
	wg     sync.WaitGroup
}

var (
	_ volume.ConfigMapSource = (*WatchingSources)(nil)
	_ volume.SecretSource    = (*WatchingSources)(nil)
	_ volume.TokenSource     = (*WatchingSources)(nil)
)

// watchedObject is one watched object: its reflector's store, a channel
// closed after the first list, and the last list error.
type watchedObject struct {
	store    cache.Store
	synced   chan struct{}
	syncOnce sync.Once
	cancel   context.CancelFunc

	mu       sync.Mutex
	lastErr  error
	lastUsed time.Time
}

// syncedStore closes its object's synced channel after the first Replace
// (the end of a list).
type syncedStore struct {
	cache.Store
	obj *watchedObject
}

// Replace replaces the store's content and marks the object listed.
func (s syncedStore) Replace(list []interface{}, rv string) error {
	err := s.Store.Replace(list, rv)
	s.obj.syncOnce.Do(func() { close(s.obj.synced) })
	return err
}

// NewWatchingSources returns the sources reading through client. It starts
// nothing: call Run.
func NewWatchingSources(client kubernetes.Interface, opts WatchingSourcesOptions) (*WatchingSources, error) {
	if client == nil {
		return nil, fmt.Errorf("new watching sources: client is nil: %w", ErrInvalidArgument)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Idle <= 0 {
		opts.Idle = DefaultWatchIdle
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultWatchSyncTimeout
	}
	return &WatchingSources{client: client, o: opts, log: orDiscard(opts.Logger), items: map[objectKey]*watchedObject{}}, nil
}

// Sources returns the three sources as the volume block takes them, and
// the claims of the same API server (Claims, read with a GET each time,
// not watched).
func (s *WatchingSources) Sources() volume.Sources {
	return volume.Sources{ConfigMaps: s, Secrets: s, Tokens: s, Claims: NewClaims(s.client)}
}

// Run serves reads until ctx ends, stopping the watches of idle objects
// every Idle/2; then it stops every watch and returns nil once their
// goroutines have ended. Running it twice at once is an error.
func (s *WatchingSources) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.runCtx != nil {
		s.mu.Unlock()
		return fmt.Errorf("run watching sources: already running: %w", ErrInvalidArgument)
	}
	s.runCtx = ctx
	s.mu.Unlock()

	t := s.o.Clock.NewTicker(s.o.Idle / 2)
	defer t.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C():
			s.sweep()
		}
	}
	s.mu.Lock()
	s.runCtx = nil
	for k, it := range s.items {
		it.cancel()
		delete(s.items, k)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Watched returns how many objects are being watched.
func (s *WatchingSources) Watched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

func (s *WatchingSources) sweep() {
	now := s.o.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, it := range s.items {
		it.mu.Lock()
		idle := now.Sub(it.lastUsed) >= s.o.Idle
		it.mu.Unlock()
		if idle {
			it.cancel()
			delete(s.items, k)
			s.log.Debug("stopped watching an idle object", "kind", k.kind, "object", k.namespace+"/"+k.name)
		}
	}
}

// GetConfigMap returns the configMap from its watch. The object is shared:
// do not modify it.
func (s *WatchingSources) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := s.get(ctx, objectKey{"configmap", namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret returns the secret from its watch. The object is shared: do
// not modify it.
func (s *WatchingSources) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := s.get(ctx, objectKey{"secret", namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// GetServiceAccountToken requests a token through the TokenRequest API, as
// VolumeSources.GetServiceAccountToken.
func (s *WatchingSources) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return requestToken(ctx, s.client, namespace, name, req)
}

func (s *WatchingSources) get(ctx context.Context, key objectKey) (any, error) {
	what := fmt.Sprintf("%s %s/%s", key.kind, key.namespace, key.name)
	s.mu.Lock()
	if s.runCtx == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("get %s: %w", what, ErrNotRunning)
	}
	it, ok := s.items[key]
	if !ok {
		it = s.start(key)
		s.items[key] = it
	}
	it.mu.Lock()
	it.lastUsed = s.o.Clock.Now()
	it.mu.Unlock()
	s.mu.Unlock()

	select {
	case <-it.synced:
	default:
		t := s.o.Clock.NewTimer(s.o.SyncTimeout)
		defer t.Stop()
		select {
		case <-it.synced:
		case <-ctx.Done():
			return nil, fmt.Errorf("get %s: waiting for its first list: %w", what, ctx.Err())
		case <-t.C():
			it.mu.Lock()
			err := it.lastErr
			it.mu.Unlock()
			if err == nil {
				err = errors.New("no answer yet")
			}
			return nil, fmt.Errorf("get %s: not listed within %v: %w", what, s.o.SyncTimeout, err)
		}
	}
	obj, exists, err := it.store.GetByKey(key.namespace + "/" + key.name)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", what, err)
	}
	if !exists {
		return nil, volume.NotFound(key.kind, key.name)
	}
	return obj, nil
}

// start starts the reflector of one object; s.mu is held.
func (s *WatchingSources) start(key objectKey) *watchedObject {
	ctx, cancel := context.WithCancel(s.runCtx)
	it := &watchedObject{store: cache.NewStore(cache.MetaNamespaceKeyFunc), synced: make(chan struct{}), cancel: cancel}
	selector := fields.OneTermEqualSelector("metadata.name", key.name).String()
	var expected runtime.Object
	var list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	var watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
	switch key.kind {
	case "configmap":
		c := s.client.CoreV1().ConfigMaps(key.namespace)
		expected = &v1.ConfigMap{}
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	default:
		c := s.client.CoreV1().Secrets(key.namespace)
		expected = &v1.Secret{}
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) }
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			obj, err := list(ctx, o)
			it.mu.Lock()
			it.lastErr = err
			it.mu.Unlock()
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return watchFn(ctx, o)
		},
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.client), expected,
		syncedStore{Store: it.store, obj: it}, cache.ReflectorOptions{
			Name:    key.kind + " " + key.namespace + "/" + key.name,
			Clock:   s.o.Clock,
			Backoff: s.o.Backoff,
		})
	s.wg.Go(func() { r.RunWithContext(ctx) })
	s.log.Debug("watching an object", "kind", key.kind, "object", key.namespace+"/"+key.name)
	return it
}
