package eviction

import (
	"context"
	"errors"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// Defaults, as upstream.
const (
	// DefaultMonitoringInterval is how often Run synchronizes.
	DefaultMonitoringInterval = 10 * time.Second
	// DefaultPressureTransitionPeriod is how long a pressure condition
	// stays true after its thresholds were last met.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// HardEvictionGracePeriodSeconds is the grace period of a pod evicted
	// for a hard threshold.
	HardEvictionGracePeriodSeconds int64 = 1
	// podCleanupTimeout bounds how long Run waits for an evicted pod to be
	// cleaned up, polling every podCleanupPollFreq.
	podCleanupTimeout  = 30 * time.Second
	podCleanupPollFreq = time.Second
)

// Reason is the reason of an evicted pod's status, of its Evicted event and
// of a pod rejected at admission.
const Reason = "Evicted"

// EventThresholdMet is the reason of the Warning event on the node when the
// manager starts reclaiming a resource.
const EventThresholdMet = "EvictionThresholdMet"

// Sentinels for a missing required option.
var (
	ErrMissingStats  = errors.New("eviction: missing stats provider")
	ErrMissingPods   = errors.New("eviction: missing active pods func")
	ErrMissingKiller = errors.New("eviction: missing pod killer")
)

// PodKiller kills a pod being evicted. The agent routes it to the pod
// workers' synchronous kill; it returns when the pod's containers stopped
// (or the kill failed).
type PodKiller interface {
	// KillPodForEviction kills pod with gracePeriodOverride seconds of
	// grace. status is what the pod's status must become: phase Failed,
	// reason Evicted, the eviction message, and (for pressure evictions)
	// a DisruptionTarget condition.
	KillPodForEviction(ctx context.Context, pod *v1.Pod, status v1.PodStatus, gracePeriodOverride *int64) error
}

// PodKillerFunc adapts a function to PodKiller.
type PodKillerFunc func(ctx context.Context, pod *v1.Pod, status v1.PodStatus, gracePeriodOverride *int64) error

// KillPodForEviction calls f.
func (f PodKillerFunc) KillPodForEviction(ctx context.Context, pod *v1.Pod, status v1.PodStatus, gracePeriodOverride *int64) error {
	return f(ctx, pod, status, gracePeriodOverride)
}

// ImageGarbageCollector frees disk by deleting images no container uses.
type ImageGarbageCollector interface {
	DeleteUnusedImages(ctx context.Context) error
}

// ImageGarbageCollectorFunc adapts a function to ImageGarbageCollector.
type ImageGarbageCollectorFunc func(ctx context.Context) error

// DeleteUnusedImages calls f.
func (f ImageGarbageCollectorFunc) DeleteUnusedImages(ctx context.Context) error { return f(ctx) }

// ContainerGarbageCollector frees disk by deleting dead containers.
type ContainerGarbageCollector interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

// ContainerGarbageCollectorFunc adapts a function to ContainerGarbageCollector.
type ContainerGarbageCollectorFunc func(ctx context.Context) error

// DeleteAllUnusedContainers calls f.
func (f ContainerGarbageCollectorFunc) DeleteAllUnusedContainers(ctx context.Context) error {
	return f(ctx)
}

// EventRecorder records events; client-go's record.EventRecorder fits.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

var (
	_ PodKiller                 = PodKillerFunc(nil)
	_ ImageGarbageCollector     = ImageGarbageCollectorFunc(nil)
	_ ContainerGarbageCollector = ContainerGarbageCollectorFunc(nil)
)

// Options configures New. Zero values are the documented defaults.
type Options struct {
	// Thresholds are the eviction thresholds (ParseThresholds,
	// DefaultHardThresholds). None means only local storage limits are
	// enforced.
	Thresholds []Threshold
	// Stats measures the node and its pods. Required.
	Stats stats.Provider
	// Pods returns the active pods: admitted and not terminated. Required.
	Pods func() []*v1.Pod
	// Killer kills an evicted pod. Required.
	Killer PodKiller
	// ImageGC deletes unused images under disk pressure. Nil means none.
	ImageGC ImageGarbageCollector
	// ContainerGC deletes dead containers under disk pressure. Nil means
	// none.
	ContainerGC ContainerGarbageCollector
	// PodCleanedUp, when set, tells Run whether an evicted pod's resources
	// are gone; Run then waits for it (polling every second, at most 30s)
	// before the next pass instead of waiting MonitoringInterval.
	PodCleanedUp func(pod *v1.Pod) bool
	// MonitoringInterval is how often Run synchronizes. Default 10s.
	MonitoringInterval time.Duration
	// PressureTransitionPeriod is how long a pressure condition stays true
	// after its thresholds were last met. Default 5m.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps the grace period of a pod evicted for
	// a soft threshold: the pod gets min(this, its own
	// terminationGracePeriodSeconds). Default 0, as upstream's
	// --eviction-max-pod-grace-period.
	MaxPodGracePeriodSeconds int64
	// NodeRef is the node that EvictionThresholdMet events are recorded
	// on. Nil means no such event.
	NodeRef *v1.ObjectReference
	// Clock gives the time. Default the real clock.
	Clock clock.WithTicker
	// Logger receives the manager's logs. Nil discards them.
	Logger *slog.Logger
	// Recorder receives the Evicted events on pods. Nil means none.
	Recorder EventRecorder
	// OnEvict, when set, is called as each pod is evicted, with the signal
	// that decided it: a threshold's (memory.available ...) or a local
	// storage limit's (emptydirfs.limit, ephemeralpodfs.limit,
	// ephemeralcontainerfs.limit), upstream's kubelet_evictions label.
	OnEvict func(pod *v1.Pod, signal Signal)
}
