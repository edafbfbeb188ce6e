package volume

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults, as upstream where upstream has one.
const (
	// DefaultReconcilePeriod is how often Run reconciles (upstream's
	// reconcilerLoopSleepPeriod).
	DefaultReconcilePeriod = 100 * time.Millisecond
	// DefaultRefreshPeriod is how often the content of configMap, secret,
	// downwardAPI and projected volumes is written again from their
	// sources (upstream re-syncs them on the pod's sync, every minute).
	DefaultRefreshPeriod = time.Minute
	// DefaultMountTimeout bounds WaitForMount (upstream's
	// podAttachAndMountTimeout).
	DefaultMountTimeout = 2*time.Minute + 3*time.Second
	// backoffInitial and backoffMax pace the retries of a failing
	// operation (upstream's exponential backoff of volume operations).
	backoffInitial = 500 * time.Millisecond
	backoffMax     = 2*time.Minute + 2*time.Second
)

// Event reasons, as upstream.
const (
	// EventFailedMount is the reason of the Warning event for a volume that
	// could not be set up.
	EventFailedMount = "FailedMount"
)

// Sentinels.
var (
	// ErrInvalidOptions is wrapped by New's errors.
	ErrInvalidOptions = errors.New("volume: invalid options")
	// ErrNoSource is wrapped when a pod needs a ConfigMap, Secret or token
	// source that Options.Sources does not have.
	ErrNoSource = errors.New("no source configured")
	// ErrUnsupported is wrapped when no plugin supports a volume, or a
	// plugin does not support one of its settings.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalidVolume is wrapped when a pod's volume or volumeMount is
	// malformed (bad name, traversal in a path, ...).
	ErrInvalidVolume = errors.New("invalid volume")
	// ErrTimeout is wrapped by WaitForMount and WaitForUnmount when
	// MountTimeout passed first.
	ErrTimeout = errors.New("timed out waiting for the condition")
	// ErrPodRemoved is wrapped by WaitForMount when the pod is removed
	// while it waits.
	ErrPodRemoved = errors.New("pod removed while waiting for its volumes")
	// ErrNotAttached is wrapped by the set up of a persistent volume that
	// needs attaching to the node (a CSI driver's attachRequired), which
	// this node does not do; WaitForMount lists it in "unattached volumes".
	ErrNotAttached = errors.New("volume not attached")
	// ErrNotMounted is wrapped by Mounts when a volume is not set up.
	ErrNotMounted = errors.New("volume not mounted")
	// ErrAlreadyRunning is returned by a second Run.
	ErrAlreadyRunning = errors.New("volume: manager already running")
)

// EventRecorder receives events; client-go's record.EventRecorder satisfies
// it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// CSIDriversFunc looks up a CSI driver's endpoint by name: a unix socket
// path ("/var/lib/kubelet/plugins/csi.example.com/csi.sock") or a
// "unix://" URL; ok is false for an unknown driver.
type CSIDriversFunc func(name string) (endpoint string, ok bool)

// Options configures a Manager. RootDir is required; every other zero
// value is the documented default.
type Options struct {
	// RootDir is the kubelet's root directory (upstream's /var/lib/kubelet).
	// A pod's volumes live in
	// <RootDir>/pods/<uid>/volumes/<plugin, '/' escaped as '~'>/<volume>,
	// e.g. .../volumes/kubernetes.io~empty-dir/cache. Required.
	RootDir string
	// Sources gives configMaps, secrets and service account tokens (each
	// nil: a pod that needs it gets an error wrapping ErrNoSource).
	Sources Sources
	// Plugins are extra plugins, asked before the built-ins; one with a
	// built-in's name replaces that built-in (its volumes, and those found
	// on disk under that name, are then its own).
	Plugins []Plugin
	// CSIDrivers finds CSI node drivers by name (nil: no CSI driver; a
	// pod with a csi volume gets an error).
	CSIDrivers CSIDriversFunc
	// CSITimeout bounds each CSI call (zero: 2m, upstream's csiTimeout).
	CSITimeout time.Duration
	// NodeName is this node's name, given to CSI drivers (NodeId is asked
	// from the driver itself).
	NodeName string
	// NodeAllocatable fills a downwardAPI limits.* that a container does
	// not set, as upstream does (nil: such a limit is an error).
	NodeAllocatable v1.ResourceList
	// Mounter mounts tmpfs for emptyDir medium Memory, secret and projected
	// volumes (nil: the syscall-based one on Linux, which needs
	// CAP_SYS_ADMIN; elsewhere one that fails with ErrMountNotSupported).
	Mounter Mounter
	// SecretsOnDisk, when true, keeps secret and projected volumes in plain
	// directories instead of upstream's tmpfs, for agents that may not
	// mount: their bytes then reach the disk under RootDir.
	SecretsOnDisk bool
	// UnpinnedSubPaths, when true, hands a subPath to the runtime as its
	// resolved host path, without the bind mount that pins it (see
	// Manager.Mounts), for agents that may not mount. A container that can
	// write the volume may then swap an element of the path for a symlink
	// between the check and the runtime's mount, and so have the runtime
	// mount a host path of its choosing: use it only where the pods'
	// containers are trusted or the runtime does not mount host paths (the
	// fake runtime).
	UnpinnedSubPaths bool
	// SourcesReady reports whether the agent has learned every pod it
	// should run (upstream's sourcesReady). Volumes found on disk at start
	// are not torn down before it returns true, so a restarted agent does
	// not delete an emptyDir whose pod it has not re-added yet (nil: ready
	// at once).
	SourcesReady func() bool
	// ActivePod reports whether the agent still runs the pod: its pod
	// manager has it and its worker has not finished it. A volume found on
	// disk whose pod is active is never torn down as an orphan, even once
	// the sources are ready: it waits for the pod's WaitForMount, which
	// adopts it (SetUp leaves what is there: the emptyDir's files, the
	// tmpfs the running containers have mounted). Upstream's reconciler
	// waits for its desired state to hold every pod in the same way. Nil:
	// no pod is active, and a restarted agent whose pods' workers have not
	// yet asked for their volumes when the sources turn ready loses the
	// contents of their emptyDirs.
	ActivePod func(uid types.UID) bool
	// Clock drives the reconcile period, refreshes, backoffs and timeouts
	// (nil: the real clock).
	Clock clock.WithTicker
	// Logger (nil: discard). Secret data is never logged.
	Logger *slog.Logger
	// Recorder receives FailedMount events (nil: none).
	Recorder EventRecorder
	// Metrics receives every operation's duration and outcome, as
	// upstream's storage_operation_duration_seconds (nil: none); see
	// Manager.VolumeCounts for upstream's volume_manager_total_volumes.
	Metrics Metrics
	// ReconcilePeriod (zero: DefaultReconcilePeriod).
	ReconcilePeriod time.Duration
	// RefreshPeriod (zero: DefaultRefreshPeriod).
	RefreshPeriod time.Duration
	// MountTimeout (zero: DefaultMountTimeout).
	MountTimeout time.Duration
}

func (o *Options) setDefaults() error {
	if o.RootDir == "" {
		return fmt.Errorf("%w: RootDir is required", ErrInvalidOptions)
	}
	for name, d := range map[string]time.Duration{
		"ReconcilePeriod": o.ReconcilePeriod, "RefreshPeriod": o.RefreshPeriod,
		"MountTimeout": o.MountTimeout, "CSITimeout": o.CSITimeout,
	} {
		if d < 0 {
			return fmt.Errorf("%w: %s is negative (%s)", ErrInvalidOptions, name, d)
		}
	}
	for i, p := range o.Plugins {
		if p == nil {
			return fmt.Errorf("%w: Plugins[%d] is nil", ErrInvalidOptions, i)
		}
	}
	if o.ReconcilePeriod == 0 {
		o.ReconcilePeriod = DefaultReconcilePeriod
	}
	if o.RefreshPeriod == 0 {
		o.RefreshPeriod = DefaultRefreshPeriod
	}
	if o.MountTimeout == 0 {
		o.MountTimeout = DefaultMountTimeout
	}
	if o.CSITimeout == 0 {
		o.CSITimeout = 2 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Mounter == nil {
		o.Mounter = defaultMounter()
	}
	if o.SourcesReady == nil {
		o.SourcesReady = func() bool { return true }
	}
	return nil
}
