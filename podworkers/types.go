package podworkers

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateType says why an update was sent. The names and meanings are
// upstream's SyncPodType: the syncer may take liberties on a create (for
// example trust the pod's status), and a kill asks for termination.
type UpdateType uint8

const (
	// SyncPodSync is a periodic or requested resync of a pod whose
	// configuration did not change. The zero value.
	SyncPodSync UpdateType = iota
	// SyncPodUpdate carries a changed pod configuration.
	SyncPodUpdate
	// SyncPodCreate is the first update for a pod (a new pod, or a pod seen
	// for the first time after the agent restarted).
	SyncPodCreate
	// SyncPodKill asks for the pod to be terminated (eviction, preemption,
	// removal by the agent, or an orphan found only in the runtime).
	SyncPodKill
)

// String returns upstream's name of the update type: "sync", "update",
// "create" or "kill".
func (t UpdateType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	default:
		return "unknown"
	}
}

// PodStatusFunc edits the status a terminating pod reports, for example to set
// the reason Evicted and a message. It is called by the Syncer's
// SyncTerminatingPod with the latest status generated for the pod.
type PodStatusFunc func(status *v1.PodStatus)

// KillPodOptions refine a kill. Their zero value is a plain kill with the
// pod's own grace period.
type KillPodOptions struct {
	// Evict marks the kill as an eviction by the node agent: once the pod is
	// terminated, ShouldPodContentBeRemoved reports true even if the pod is not
	// deleted, so volumes and other content are reclaimed promptly.
	Evict bool
	// PodStatusFunc, if set, edits the final status of the pod. When several
	// kills carry one, the latest wins (a preemption may become an eviction).
	PodStatusFunc PodStatusFunc
	// PodTerminationGracePeriodSecondsOverride, if set, shortens the grace
	// period. It can never lengthen it: the effective grace period of a
	// terminating pod only shrinks, and is never less than one second.
	PodTerminationGracePeriodSecondsOverride *int64
}

// UpdatePodOptions is one update to one pod. Either Pod or RunningPod must be
// set.
type UpdatePodOptions struct {
	// UpdateType says why the update was sent. Once a pod is terminating every
	// update is treated as a kill, whatever its type.
	UpdateType UpdateType
	// Pod is the desired pod, from configuration (API server, static file or
	// HTTP source). Its UID identifies the worker.
	Pod *v1.Pod
	// MirrorPod is the mirror pod of a static Pod, if one exists. When an
	// update leaves it nil, the last mirror pod seen is kept.
	MirrorPod *v1.Pod
	// RunningPod is a pod known only from the container runtime (an orphan:
	// no configuration names its UID). It carries what the runtime's labels
	// say: UID, Name and Namespace at least; Spec may be empty. It is only
	// valid with UpdateType SyncPodKill and when Pod is nil; if the workers
	// already know a configured pod with that UID, that pod is killed instead.
	RunningPod *v1.Pod
	// KillPodOptions refine a kill (grace period override, status edit,
	// eviction). They are ignored unless the pod is, or becomes, terminating.
	KillPodOptions KillPodOptions
	// StartTime is when the agent began handling the change that sent this
	// update (upstream's dispatch time). The work that takes the update is
	// measured from it (Metrics.ObserveWork's SinceStart); zero means it is
	// not measured, as upstream does not measure kills of runtime-only pods,
	// evictions and housekeeping's restarts. A newer pending update
	// replaces an older one's StartTime.
	StartTime time.Time
}

// uid returns the UID the update is for.
func (o *UpdatePodOptions) uid() types.UID {
	if o.Pod != nil {
		return o.Pod.UID
	}
	if o.RunningPod != nil {
		return o.RunningPod.UID
	}
	return ""
}

// State is where a pod is in its lifecycle, as the workers see it.
type State uint8

const (
	// StateSyncing: the pod is set up and kept running by SyncPod.
	StateSyncing State = iota
	// StateTerminating: termination was requested; SyncPod will not run again
	// once the worker observes it, and SyncTerminatingPod runs until it
	// succeeds.
	StateTerminating
	// StateTerminated: no container runs and none will start;
	// SyncTerminatedPod runs until it succeeds.
	StateTerminated
	// StateFinished: SyncTerminatedPod succeeded. The UID will never run
	// again; SyncKnownPods forgets it once it leaves the desired set.
	StateFinished
)

// String returns "syncing", "terminating", "terminated" or "finished".
func (s State) String() string {
	switch s {
	case StateSyncing:
		return "syncing"
	case StateTerminating:
		return "terminating"
	case StateTerminated:
		return "terminated"
	case StateFinished:
		return "finished"
	default:
		return "unknown"
	}
}

// WorkKind is which Syncer method a unit of work calls.
type WorkKind uint8

const (
	// WorkSync calls Syncer.SyncPod.
	WorkSync WorkKind = iota
	// WorkTerminating calls Syncer.SyncTerminatingPod.
	WorkTerminating
	// WorkTerminatingRuntime calls Syncer.SyncTerminatingRuntimePod.
	WorkTerminatingRuntime
	// WorkTerminated calls Syncer.SyncTerminatedPod.
	WorkTerminated
)

// String returns the Syncer method the kind calls, e.g. "SyncPod".
func (k WorkKind) String() string {
	switch k {
	case WorkSync:
		return "SyncPod"
	case WorkTerminating:
		return "SyncTerminatingPod"
	case WorkTerminatingRuntime:
		return "SyncTerminatingRuntimePod"
	case WorkTerminated:
		return "SyncTerminatedPod"
	default:
		return "unknown"
	}
}

// Work is one unit of work the Machine hands to a worker: which Syncer method
// to call and with what. A driver calls the method and reports the outcome with
// Machine.Complete.
type Work struct {
	// UID is the pod the work is for.
	UID types.UID
	// Kind selects the Syncer method.
	Kind WorkKind
	// UpdateType is the type of the update being worked on: the last one
	// taken for the pod, whatever the kind of work.
	UpdateType UpdateType
	// StartTime is that update's StartTime: zero if it had none. Work
	// replayed after a phase change (terminal, terminated) keeps it; a
	// resync or a retry starts anew.
	StartTime time.Time
	// Pod is the pod to sync. For WorkTerminatingRuntime it is the running pod
	// of an orphan, as given in UpdatePodOptions.RunningPod.
	Pod *v1.Pod
	// MirrorPod is the last mirror pod seen for a static pod, or nil.
	MirrorPod *v1.Pod
	// GracePeriodSeconds is the effective grace period for WorkTerminating:
	// at least 1, and never longer than in an earlier attempt.
	GracePeriodSeconds int64
	// PodStatusFunc is the latest status edit requested by a kill, for
	// WorkTerminating; nil if none.
	PodStatusFunc PodStatusFunc
	// NewerThan is when the previous work for this pod completed (zero before
	// the first). Before calling the Syncer the driver waits until the runtime
	// status of the pod is newer than this, except for WorkTerminatingRuntime.
	NewerThan time.Time
}

// Result is the outcome of one unit of work, reported to Machine.Complete.
type Result struct {
	// Terminal is SyncPod's first return value: the pod reached a terminal
	// phase on its own and should now terminate. Ignored when Err is set and
	// for other kinds of work.
	Terminal bool
	// Err is the error the Syncer returned. A nil error means the work
	// succeeded; an error requeues the pod with backoff (see RetryAfter).
	Err error
}

// WorkerSync summarises one pod known to the workers, as returned by
// SyncKnownPods.
type WorkerSync struct {
	// State is the pod's lifecycle state.
	State State
	// Orphan is true if the pod was not in the desired set.
	Orphan bool
	// HasConfig is true if the workers hold a configured pod for the UID (as
	// opposed to only a running pod from the runtime).
	HasConfig bool
	// Static is true if the pod is a static pod (from a file or HTTP source).
	Static bool
}
