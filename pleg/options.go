package pleg

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Runtime is the part of a CRI runtime a relisting PLEG calls: it lists
// sandboxes and containers, and inspects the ones that changed.
// cri.RuntimeService and fake.Runtime satisfy it.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// EventedRuntime is a Runtime that also streams container events (see
// cri.EventSource for the contract of GetContainerEvents).
type EventedRuntime interface {
	Runtime
	GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error]
}

// ErrInvalidOptions is wrapped by the errors of NewGeneric and NewEvented when
// a required option is missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// Upstream's defaults.
const (
	// DefaultRelistPeriod is the generic PLEG's relist period (upstream's
	// genericPlegRelistPeriod).
	DefaultRelistPeriod = time.Second
	// DefaultRelistThreshold is how old the last successful relist may be
	// before the generic PLEG is unhealthy (genericPlegRelistThreshold).
	DefaultRelistThreshold = 3 * time.Minute
	// DefaultEventedRelistPeriod is the evented PLEG's safety-net relist
	// period while events flow (eventedPlegRelistPeriod).
	DefaultEventedRelistPeriod = 300 * time.Second
	// DefaultEventedRelistThreshold is the health threshold while events
	// flow (eventedPlegRelistThreshold).
	DefaultEventedRelistThreshold = 10 * time.Minute
	// DefaultMaxStreamFailures is how many consecutive stream failures make
	// the evented PLEG fall back to relisting (eventedPlegMaxStreamRetries).
	DefaultMaxStreamFailures = 5
	// DefaultCacheRefreshPeriod is how often the evented PLEG inspects the
	// pods that workers wait on (upstream's globalCacheUpdatePeriod, with
	// which it bumped the cache's global timestamp instead).
	DefaultCacheRefreshPeriod = 2 * time.Second
	// DefaultParallelism is how many pods a relist inspects at once.
	// Upstream inspects one at a time; 8 keeps a runtime busy without
	// flooding it.
	DefaultParallelism = 8
	// DefaultRuntimeTimeout bounds each list call and each pod's inspection
	// (upstream's runtime request timeout).
	DefaultRuntimeTimeout = 2 * time.Minute
	// DefaultStreamRetryPeriod is the wait before reopening an event stream
	// that failed twice in a row (a first failure is retried at once); it
	// doubles with each further failure up to maxStreamRetryPeriod.
	DefaultStreamRetryPeriod = time.Second
)

// maxStreamRetryPeriod caps the wait between attempts to reopen the event
// stream, so that events resume within a minute of the runtime being back.
const maxStreamRetryPeriod = time.Minute

// GenericOptions configures NewGeneric. The zero value of every field but
// Runtime is the documented default.
type GenericOptions struct {
	// Runtime is the container runtime to relist. Required.
	Runtime Runtime
	// Cache receives the pods' statuses. Nil means a new cache, returned by
	// Generic.Cache; pass one to share it with the pod workers.
	Cache *Cache
	// Clock drives the relist period, the timeouts and the timestamps.
	// Nil means the real clock.
	Clock clock.WithDelayedExecution
	// Logger receives the PLEG's logs. Nil means none.
	Logger *slog.Logger
	// Metrics receives the PLEG's measurements. Nil means none.
	Metrics Metrics
	// OnEvents, when set, receives each pod's events of a relist in one
	// synchronous call, and the Events channel is never written. It must not
	// block: the relist waits for it. As on the channel, the cache already
	// holds the status the events describe (stamped with the relist's
	// start), so that work it starts for the pod, such as a pod worker's
	// sync, reads a status at least that new: a pod's events of one relist
	// cause one sync, on the state they report. It is called from the
	// relist's inspections, up to Parallelism at once for different pods:
	// it must be safe for concurrent use. The slice is the function's to
	// keep: the PLEG never touches it again.
	OnEvents func(events []Event)

	// RelistPeriod is the pause between the end of a relist and the start
	// of the next (upstream: wait.Until). Default DefaultRelistPeriod (1s).
	RelistPeriod time.Duration
	// RelistThreshold is how old the last successful relist may be before
	// Healthy reports false. Default DefaultRelistThreshold (3m).
	RelistThreshold time.Duration
	// Parallelism is how many pods a relist inspects at once. Default
	// DefaultParallelism (8); 1 inspects serially, as upstream does.
	Parallelism int
	// RuntimeTimeout bounds each list call and each pod's inspection, on
	// Clock. Default DefaultRuntimeTimeout (2m).
	RuntimeTimeout time.Duration
}

// EventedOptions configures NewEvented. The zero value of every field but
// Runtime is the documented default.
type EventedOptions struct {
	// Runtime is the container runtime to follow and relist. Required.
	Runtime EventedRuntime
	// Cache receives the pods' statuses. Nil means a new cache, returned by
	// Evented.Cache.
	Cache *Cache
	// Clock drives the periods, the timeouts and the relist timestamps.
	// Event timestamps are the runtime's. Nil means the real clock.
	Clock clock.WithDelayedExecution
	// Logger receives the PLEG's logs. Nil means none.
	Logger *slog.Logger
	// Metrics receives the PLEG's measurements. Nil means none.
	Metrics Metrics
	// OnEvents, when set, receives each pod's events of a relist, and those
	// of each container event, in one synchronous call, and the Events
	// channel is never written. It must not block: the relist (or the event
	// stream) waits for it. As on the channel, the cache already holds the
	// status the events describe, so that work it starts for the pod reads
	// a status at least that new (see GenericOptions.OnEvents). It is called
	// from the relist's inspections and from the event stream's goroutine:
	// it must be safe for concurrent use. The slice is the function's to
	// keep: the PLEG never touches it again.
	OnEvents func(events []Event)

	// RelistPeriod is the safety-net relist period while events flow.
	// Default DefaultEventedRelistPeriod (300s).
	RelistPeriod time.Duration
	// RelistThreshold is the health threshold while events flow. Default
	// DefaultEventedRelistThreshold (10m).
	RelistThreshold time.Duration
	// FallbackRelistPeriod is the relist period while the stream is down
	// (after MaxStreamFailures). It is also how long a reopened stream must
	// stay open, if no event comes first, to count as connected. Default
	// DefaultRelistPeriod (1s).
	FallbackRelistPeriod time.Duration
	// FallbackRelistThreshold is the health threshold while the stream is
	// down. Default DefaultRelistThreshold (3m).
	FallbackRelistThreshold time.Duration
	// MaxStreamFailures is how many consecutive stream failures make the
	// PLEG fall back to relisting. Default DefaultMaxStreamFailures (5).
	MaxStreamFailures int
	// StreamRetryPeriod is the wait before reopening a stream that failed
	// twice in a row; it doubles with each further failure, up to a minute.
	// A first failure is retried at once. Default DefaultStreamRetryPeriod
	// (1s).
	StreamRetryPeriod time.Duration
	// CacheRefreshPeriod is how often the PLEG inspects the pods that pod
	// workers wait on in the Cache while events flow (it also does so as
	// soon as a wait begins). Default DefaultCacheRefreshPeriod (2s).
	CacheRefreshPeriod time.Duration
	// Parallelism is how many pods a relist, or a cache refresh, inspects
	// at once. Default DefaultParallelism (8).
	Parallelism int
	// RuntimeTimeout bounds each list call and each pod's inspection, on
	// Clock. Default DefaultRuntimeTimeout (2m).
	RuntimeTimeout time.Duration
}

// common is what both constructors resolve from their options.
type common struct {
	cache   *Cache
	clock   clock.WithDelayedExecution
	log     *slog.Logger
	metrics Metrics
}

func resolveCommon(cache *Cache, clk clock.WithDelayedExecution, log *slog.Logger, m Metrics) common {
	c := common{cache: cache, clock: clk, log: log, metrics: m}
	if c.cache == nil {
		c.cache = NewCache()
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.metrics == nil {
		c.metrics = nopMetrics{}
	}
	return c
}

// orDefault returns v, or def when v is zero; negative values are an error.
func orDefault[T time.Duration | int](name string, v, def T) (T, error) {
	switch {
	case v < 0:
		return 0, fmt.Errorf("%s is negative (%v): %w", name, v, ErrInvalidOptions)
	case v == 0:
		return def, nil
	}
	return v, nil
}
