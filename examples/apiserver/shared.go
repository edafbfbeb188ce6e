package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// SharedOptions configure NewShared. Every field is optional.
type SharedOptions struct {
	// Logger receives the shared adapters' logs; nil discards them.
	Logger *slog.Logger
}

// Shared are the adapters that many nodes joined from one process can
// share, because what they read or write does not depend on the node: the
// services' list and watch of every namespace (the same watch for every
// kubelet), the watches of the configMaps and secrets that pods read (one
// watch per object, whichever node's pod reads it; the watched objects are
// not per node), and one event broadcaster that writes every node's events
// (each node records with its own source host). Pass it in
// JoinOptions.Shared of every node, and run it with Run beside the nodes.
//
// Sharing changes nothing a node does or reports: a node reads the same
// objects from a shared watch as from its own, and its events carry its own
// name. It saves, per node, a reflector of every service, a reflector per
// object its pods read and an event broadcaster's goroutines.
type Shared struct {
	client   kubernetes.Interface
	log      *slog.Logger
	services *Services
	volumes  *WatchingSources

	ran         atomic.Bool
	ready       chan struct{} // closed once Run has started the broadcaster
	broadcaster record.EventBroadcaster
}

// NewShared returns the shared adapters of client. It starts nothing: call
// Run. A nil client is an error wrapping ErrInvalidArgument.
func NewShared(client kubernetes.Interface, opts SharedOptions) (*Shared, error) {
	if client == nil {
		return nil, fmt.Errorf("new shared adapters: client is nil: %w", ErrInvalidArgument)
	}
	log := orDiscard(opts.Logger)
	s := &Shared{client: client, log: log, ready: make(chan struct{})}
	var err error
	if s.services, err = NewServices(client, ServicesOptions{Logger: log.With("component", "api-services")}); err != nil {
		return nil, fmt.Errorf("new shared adapters: %w", err)
	}
	if s.volumes, err = NewWatchingSources(client, WatchingSourcesOptions{Logger: log.With("component", "api-volumes")}); err != nil {
		return nil, fmt.Errorf("new shared adapters: %w", err)
	}
	return s, nil
}

// Run starts the event broadcaster and runs the services' and the volume
// sources' watches until ctx ends; then it stops the broadcaster (events
// not yet written are dropped) and returns once every goroutine it started
// has ended. Nodes joined with s wait for Run to start before they run.
// Run may be called once.
func (s *Shared) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("run shared adapters: already run: %w", ErrInvalidArgument)
	}
	s.broadcaster = record.NewBroadcaster()
	s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()
	close(s.ready)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for name, f := range map[string]func(context.Context) error{"services": s.services.Run, "volume sources": s.volumes.Run} {
		wg.Go(func() {
			defer cancel()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("run shared adapters: %s: %w", name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wait blocks until Run has started the broadcaster, or ctx ends.
func (s *Shared) wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recorder returns an event recorder of nodeName on the shared broadcaster;
// Run must have started.
func (s *Shared) recorder(nodeName string) record.EventRecorder {
	return s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent, Host: nodeName})
}

// Services returns the shared services (a containerconfig.ServiceLister).
func (s *Shared) Services() *Services { return s.services }

// VolumeSources returns the shared configMap, secret and token sources.
func (s *Shared) VolumeSources() *WatchingSources { return s.volumes }
