package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Syncer does the work the pod workers schedule. The composing agent implements
// it (typically: wait for volumes, sync the sandbox and containers, write
// status). The workers call it for one pod at a time, never concurrently for
// the same UID, and concurrently for different UIDs, so an implementation must
// be safe for concurrent use across pods.
//
// Each method gets a ctx that is cancelled when the work in flight is
// superseded: the pod began terminating while SyncPod ran, or a shorter grace
// period arrived while SyncTerminatingPod ran; or when Workers.Run ends. A
// method that sees its ctx cancelled should return promptly with an error
// wrapping ctx.Err(), unless it finished anyway; the workers then run the
// newer work.
//
// The methods read the runtime state of the pod themselves (for example from
// the pleg cache); before each call except SyncTerminatingRuntimePod the
// workers have waited, through the StatusWaiter, until that state is newer
// than the end of the previous call for the pod.
type Syncer interface {
	// SyncPod sets up the pod and starts, restarts and updates its
	// containers. It returns terminal=true when the pod reached a terminal
	// phase on its own (all containers exited under restartPolicy Never or
	// OnFailure); the workers then terminate it. An error requeues the pod
	// with backoff. mirrorPod is the mirror pod of a static pod, or nil.
	SyncPod(ctx context.Context, updateType UpdateType, pod, mirrorPod *v1.Pod) (terminal bool, err error)
	// SyncTerminatingPod stops every container of the pod within
	// gracePeriodSeconds (at least 1, and never longer than in an earlier
	// call for the pod) and records the final status, edited by statusFn if
	// it is not nil. It is called until it returns nil, which must mean that
	// no container of the pod runs or will run.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn PodStatusFunc) error
	// SyncTerminatingRuntimePod stops the containers of an orphan known only
	// from the runtime (pod carries UID, Name and Namespace from the runtime's
	// labels). It is called until it returns nil, which must mean nothing of
	// the pod runs; the workers then forget the UID.
	SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error
	// SyncTerminatedPod releases what the pod held that must be released
	// before it is considered gone (volumes, cgroups, final status). It is
	// called after SyncTerminatingPod succeeded, until it returns nil; the
	// pod is then finished.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error
}

// SyncerFuncs implements Syncer with one optional function per method. A nil
// function succeeds without doing anything (SyncPod returns terminal=false).
// It makes a one-off Syncer, or a fake that overrides some methods, a literal.
type SyncerFuncs struct {
	// SyncPodFunc implements SyncPod.
	SyncPodFunc func(ctx context.Context, updateType UpdateType, pod, mirrorPod *v1.Pod) (bool, error)
	// SyncTerminatingPodFunc implements SyncTerminatingPod.
	SyncTerminatingPodFunc func(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn PodStatusFunc) error
	// SyncTerminatingRuntimePodFunc implements SyncTerminatingRuntimePod.
	SyncTerminatingRuntimePodFunc func(ctx context.Context, pod *v1.Pod) error
	// SyncTerminatedPodFunc implements SyncTerminatedPod.
	SyncTerminatedPodFunc func(ctx context.Context, pod *v1.Pod) error
}

var _ Syncer = SyncerFuncs{}

// SyncPod calls SyncPodFunc if set.
func (f SyncerFuncs) SyncPod(ctx context.Context, updateType UpdateType, pod, mirrorPod *v1.Pod) (bool, error) {
	if f.SyncPodFunc == nil {
		return false, nil
	}
	return f.SyncPodFunc(ctx, updateType, pod, mirrorPod)
}

// SyncTerminatingPod calls SyncTerminatingPodFunc if set.
func (f SyncerFuncs) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn PodStatusFunc) error {
	if f.SyncTerminatingPodFunc == nil {
		return nil
	}
	return f.SyncTerminatingPodFunc(ctx, pod, gracePeriodSeconds, statusFn)
}

// SyncTerminatingRuntimePod calls SyncTerminatingRuntimePodFunc if set.
func (f SyncerFuncs) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	if f.SyncTerminatingRuntimePodFunc == nil {
		return nil
	}
	return f.SyncTerminatingRuntimePodFunc(ctx, pod)
}

// SyncTerminatedPod calls SyncTerminatedPodFunc if set.
func (f SyncerFuncs) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	if f.SyncTerminatedPodFunc == nil {
		return nil
	}
	return f.SyncTerminatedPodFunc(ctx, pod)
}

// StatusWaiter blocks until the runtime status of a pod is newer than a time.
// The workers call it before every sync (except for orphans known only from the
// runtime) with the time the previous sync of the pod ended, so that a sync
// never acts on runtime state older than what the previous sync did.
//
// The pleg pod cache provides this as GetNewerThan(ctx, uid, t); adapt it with
// StatusWaiterFunc, dropping the status (the Syncer reads the cache itself):
//
//	waiter := podworkers.StatusWaiterFunc(func(ctx context.Context, uid types.UID, t time.Time) error {
//		_, err := cache.GetNewerThan(ctx, uid, t)
//		return err
//	})
//
// WaitNewerThan must return when ctx is cancelled, with an error wrapping
// ctx.Err(). An error counts as a failed sync: the pod is requeued with backoff.
type StatusWaiter interface {
	// WaitNewerThan returns once the runtime status of uid is newer than t
	// (for a zero t: as soon as any status is known), or when ctx ends.
	WaitNewerThan(ctx context.Context, uid types.UID, t time.Time) error
}

// StatusWaiterFunc adapts a function to StatusWaiter.
type StatusWaiterFunc func(ctx context.Context, uid types.UID, t time.Time) error

var _ StatusWaiter = StatusWaiterFunc(nil)

// WaitNewerThan calls f.
func (f StatusWaiterFunc) WaitNewerThan(ctx context.Context, uid types.UID, t time.Time) error {
	return f(ctx, uid, t)
}

// Metrics receives measurements from the workers. It is optional (nil means
// none) and must be safe for concurrent use; it is called outside the workers'
// lock.
type Metrics interface {
	// ObserveWork reports one finished call to the Syncer.
	ObserveWork(o WorkObservation)
}

// WorkObservation is one finished call to the Syncer.
type WorkObservation struct {
	// Kind is the Syncer method called.
	Kind WorkKind
	// UpdateType is the type of the update the work took (Work.UpdateType).
	UpdateType UpdateType
	// Took is how long the call took, including the wait for a newer runtime
	// status.
	Took time.Duration
	// SinceStart is the time from the update's StartTime to the end of the
	// call, what upstream's kubelet_pod_worker_duration_seconds measures;
	// meaningful only when Started.
	SinceStart time.Duration
	// Started says the update had a StartTime.
	Started bool
	// Err is the call's error.
	Err error
}

// MetricsFunc adapts a function to Metrics.
type MetricsFunc func(o WorkObservation)

var _ Metrics = MetricsFunc(nil)

// ObserveWork calls f.
func (f MetricsFunc) ObserveWork(o WorkObservation) { f(o) }
