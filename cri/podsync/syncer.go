package podsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/dra"
)

// ErrMissingDependency is wrapped by New's error when a required dependency
// is missing.
var ErrMissingDependency = errors.New("missing dependency")

// ErrInvalidOptions is wrapped by New's error for an option out of range.
var ErrInvalidOptions = errors.New("invalid options")

// Runtime is the part of CRI the Syncer drives: sandboxes, containers,
// exec for lifecycle hooks, a container's stats (its memory usage before an
// in-place resize shrinks its limit) and images. It is composed of cri's
// small interfaces, so that the CRI client of cri.Dial, *fake.Runtime and any
// wrapper of a whole cri.RuntimeService and cri.ImageService satisfy it.
type Runtime interface {
	cri.SandboxManager
	cri.ContainerManager
	cri.Execer
	cri.StatsProvider
	cri.ImageManager
}

// runtimeServices is what the CRI client offers.
type runtimeServices interface {
	cri.RuntimeService
	cri.ImageService
}

var _ Runtime = runtimeServices(nil)

// EventRecorder receives the Syncer's events; client-go's
// record.EventRecorder satisfies it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Credentials gives the node's registry credentials for an image pulled
// for pod, the most specific first; none means the node has none for it.
// The pod is for credentials that depend on it, as a credential provider
// plugin's with a service account token bound to the pod; most ignore it.
// It must be safe for concurrent use; a failure to get them is its own to
// log, as upstream pulls without them.
type Credentials interface {
	Credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig
}

// TrackedCredentials is an optional extension of Credentials, found by
// type assertion: the node's credentials with where they come from, so
// that the records of which credentials pulled an image
// (Options.PullRecords) tell a service account's token given to a
// credential provider plugin (cri.TrackedAuth.ServiceAccount) from the
// node's own, which every pod may use. Credentials without it are the
// node's own. cri/credentialprovider.Providers has it.
type TrackedCredentials interface {
	TrackedCredentials(ctx context.Context, pod *v1.Pod, image string) []cri.TrackedAuth
}

// PullRecords keeps the records of which credentials pulled which image
// and says whether a pod may use an image present on the node without
// pulling it with its own credentials: upstream's image pull manager, its
// KubeletEnsureSecretPulledImages feature. *pullrecords.Manager (package
// cri/pullrecords) implements it; it must be safe for concurrent use.
type PullRecords interface {
	// MustPull says whether a pod must have image (the container's image
	// field), present as imageRef, pulled with its own credentials; pod
	// looks them up, only if they matter, and its error is MustPull's.
	MustPull(ctx context.Context, image, imageRef string, pod func() (pullrecords.PodCredentials, error)) (bool, error)
	// RecordIntent is called before a pull of image; its error stops the
	// pull. Each call is matched by one RecordPulled or RecordFailed.
	RecordIntent(image string) error
	// RecordPulled records that image was pulled as imageRef with creds
	// (pullrecords.CredentialsOf the credentials that worked).
	RecordPulled(image, imageRef string, creds pullrecords.Credentials)
	// RecordFailed records that a pull of image failed.
	RecordFailed(image string)
}

var _ PullRecords = (*pullrecords.Manager)(nil)

// PullObserver is told of every image pull the Syncer makes for a pod
// (Options.Pulls): the moments upstream's image manager reports for
// kubelet_image_pull_duration_seconds and for the pod startup latency
// tracker. It is called from the pod's sync, must be safe for concurrent
// use and must not block.
type PullObserver interface {
	ImagePulled(pod *v1.Pod, p Pull)
}

// Pull is one image pull the Syncer made.
type Pull struct {
	// Image is the container's image field.
	Image string
	// Start is when the pull began, before any wait for a pull slot; End
	// when it ended (for a success, after the image's size was asked), on
	// the Syncer's clock.
	Start, End time.Time
	// Size is the image's size in bytes as the runtime reported it after
	// a successful pull (ImageStatus, as upstream asks); 0 when it did not.
	Size uint64
	// Err is the pull's failure; nil for a success.
	Err error
}

// PullObserverFunc adapts a function to PullObserver.
type PullObserverFunc func(pod *v1.Pod, p Pull)

// ImagePulled calls f.
func (f PullObserverFunc) ImagePulled(pod *v1.Pod, p Pull) { f(pod, p) }

var _ PullObserver = PullObserverFunc(nil)

// CredentialsFunc adapts a function to Credentials.
type CredentialsFunc func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig

// Credentials calls f.
func (f CredentialsFunc) Credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	return f(ctx, pod, image)
}

// ResourcePreparer prepares what a pod's resource claims (Dynamic Resource
// Allocation) give it, before its sandbox is created: package dra's
// Manager. An error holds the pod (see SyncPod).
type ResourcePreparer interface {
	PrepareResources(ctx context.Context, pod *v1.Pod) error
}

var _ ResourcePreparer = (*dra.Manager)(nil)

// ResourceUnpreparer is the optional half of a ResourcePreparer that
// releases what a terminated pod's resource claims were given (dra.Manager
// has it): UnprepareResources calls it.
type ResourceUnpreparer interface {
	UnprepareResources(ctx context.Context, pod *v1.Pod) error
}

var _ ResourceUnpreparer = (*dra.Manager)(nil)

// Options configures a Syncer. Runtime is required; every other zero value
// is the documented default.
type Options struct {
	// Runtime is the CRI runtime. Required.
	Runtime Runtime
	// Config configures the builder of the sandboxes' and containers' CRI
	// configs (package containerconfig), which New builds and the Syncer
	// keeps (Config returns it). Its Images is the Runtime when nil, its
	// Recorder the Syncer's Recorder when nil. The Syncer reads three of
	// its fields itself: Secrets gives the pods' imagePullSecrets too,
	// HostIPs the host of a host-network pod's HTTP lifecycle hooks, and
	// MemorySwapController the swap limits of in-place resizes.
	Config containerconfig.Options
	// Probes gives liveness and startup results (nil: none failed).
	Probes Probes
	// Recorder receives events (nil: none).
	Recorder EventRecorder
	// Clock drives backoffs (nil: the real clock).
	Clock clock.Clock
	// Logger (nil: discard).
	Logger *slog.Logger
	// ContainerLogLinksDir, when set, gets a symbolic link to each started
	// container's log file, named <pod>_<namespace>_<container>-<id>.log,
	// as upstream kubelet keeps /var/log/containers
	// (DefaultContainerLogLinksDir) for log collectors. A link goes when
	// its container is removed, or at garbage collection once its file is
	// gone. Empty: no links.
	ContainerLogLinksDir string
	// Credentials are the node's own registry credentials (upstream's node
	// keyring: image credential provider plugins, package
	// cri/credentialprovider), tried after those of the pod's
	// imagePullSecrets. Nil: none.
	Credentials Credentials
	// PullRecords, when set, are the records of which credentials pulled
	// which image (cri/pullrecords.Manager, upstream's
	// KubeletEnsureSecretPulledImages): a container whose image is present
	// is started without a pull only when they say its pod may use it (the
	// Pulled event then says "… already present on machine and can be
	// accessed by the pod"); otherwise the image is pulled with the pod's
	// credentials, and with pull policy Never the container fails with
	// ErrImageNeverPull as if the image were absent. Every pull records its
	// intent, then the credentials that worked. Nil: any pod uses any
	// image present, as upstream with the feature off.
	PullRecords PullRecords
	// Pulls is told of every image pull, with its times and, after a
	// success, the image's size, which the Syncer then asks the runtime
	// for (ImageStatus). Nil: nobody, and no such ImageStatus.
	Pulls PullObserver
	// BackoffInitial and BackoffMax are the crash-loop and image pull
	// backoff delays (zero: DefaultBackoffInitial, DefaultBackoffMax): the
	// first delay, doubled up to the most. Either back-off starts over
	// after 2×BackoffMax (10 minutes) without a failure.
	BackoffInitial, BackoffMax time.Duration
	// MaxContainerRestartPeriod caps the crash-loop back-off instead of
	// BackoffMax: upstream's crashLoopBackOff.maxContainerRestartPeriod
	// (KubeletCrashLoopBackOffMax, beta and on by default since 1.35;
	// its configuration allows 1s to 300s). The first delay is lowered to
	// it when it is shorter; the image pull back-off is left as it is, and
	// a crash loop still starts over only after 2×BackoffMax without a
	// crash (upstream's 10 minutes). Zero: BackoffMax. Negative fails New.
	MaxContainerRestartPeriod time.Duration
	// PodCgroups resizes the pod's own cgroup around an in-place resize
	// of its containers (package cgroups). Nil: only the containers are
	// resized.
	PodCgroups PodCgroupResizer
	// DynamicResources prepares the pods' resource claims before their
	// sandboxes are created, and, when it is also a ResourceUnpreparer,
	// releases them in UnprepareResources. Nil: a dra.Manager that reads
	// no claims, so that a pod with a claim is held, never run without its
	// devices.
	DynamicResources ResourcePreparer
	// HookTransport sends HTTP lifecycle hooks (postStart, preStop). Nil:
	// a transport of the Syncer's own as upstream's kubelet sends them
	// (TLS not verified, there being nothing to verify a pod's
	// certificate against; no proxy; one connection per request). A test
	// gives one that records or answers the hooks.
	HookTransport http.RoundTripper
}

// Syncer drives pods through the CRI: SyncPod, KillPod and
// GarbageCollect. Its methods are safe for concurrent use on different pods;
// calls for one pod must be serialized by the caller (the pod worker does).
type Syncer struct {
	rt       Runtime
	config   *containerconfig.Builder
	probes   Probes
	recorder EventRecorder
	clock    clock.Clock
	log      *slog.Logger
	opts     Options
	hooks    *http.Client // HTTP lifecycle hooks' (newHookClient)

	mu           sync.Mutex
	crashBackoff *backoff
	pullBackoff  *backoff
	reasons      map[reasonKey]v1.ContainerStateWaiting
}

type reasonKey struct {
	uid  types.UID
	name string
}

// New returns a Syncer. It fails, wrapping ErrMissingDependency, without a
// Runtime, and with containerconfig.New's error for Options.Config.
func New(opts Options) (*Syncer, error) {
	if opts.Runtime == nil {
		return nil, fmt.Errorf("podsync: runtime: %w", ErrMissingDependency)
	}
	if opts.MaxContainerRestartPeriod < 0 {
		return nil, fmt.Errorf("podsync: MaxContainerRestartPeriod %s: %w", opts.MaxContainerRestartPeriod, ErrInvalidOptions)
	}
	if opts.Config.Images == nil {
		opts.Config.Images = opts.Runtime
	}
	if opts.Config.Recorder == nil && opts.Recorder != nil {
		opts.Config.Recorder = opts.Recorder
	}
	config, err := containerconfig.New(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("podsync: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BackoffInitial <= 0 {
		opts.BackoffInitial = DefaultBackoffInitial
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.DynamicResources == nil {
		m, err := dra.New(dra.Options{})
		if err != nil {
			return nil, fmt.Errorf("podsync: %w", err)
		}
		opts.DynamicResources = m
	}
	crashMax := opts.BackoffMax
	if opts.MaxContainerRestartPeriod > 0 {
		crashMax = opts.MaxContainerRestartPeriod
	}
	return &Syncer{
		rt: opts.Runtime, config: config, probes: opts.Probes, recorder: opts.Recorder,
		clock: opts.Clock, log: opts.Logger, opts: opts, hooks: newHookClient(opts.HookTransport),
		crashBackoff: newBackoff(opts.Clock, opts.BackoffInitial, crashMax, 2*opts.BackoffMax),
		pullBackoff:  newBackoff(opts.Clock, opts.BackoffInitial, opts.BackoffMax, 2*opts.BackoffMax),
		reasons:      map[reasonKey]v1.ContainerStateWaiting{},
	}, nil
}

// Config returns the builder of the CRI configs of the Syncer's sandboxes
// and containers, for a caller that wants a pod's configs as SyncPod builds
// them. It is the node's one builder: the user namespace ranges it hands
// out are kept in it.
func (s *Syncer) Config() *containerconfig.Builder { return s.config }

// WaitingReason returns the last waiting reason and message recorded for a
// container of a pod (CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull, CreateContainerConfigError, CreateContainerError,
// RunContainerError, PostStartHookError), as upstream's reason cache does.
// It is cleared when the container starts and its postStart hook, if any,
// succeeds.
func (s *Syncer) WaitingReason(uid types.UID, containerName string) (v1.ContainerStateWaiting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.reasons[reasonKey{uid, containerName}]
	return w, ok
}

// RemovePod forgets everything kept about a pod: waiting reasons,
// backoffs, and the host IDs of its user namespace (the builder's
// RemovePod).
func (s *Syncer) RemovePod(uid types.UID) {
	s.config.RemovePod(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.reasons {
		if k.uid == uid {
			delete(s.reasons, k)
		}
	}
	s.crashBackoff.forgetPrefix(string(uid) + "/")
	s.pullBackoff.forgetPrefix(string(uid) + "/")
}

func (s *Syncer) setReason(uid types.UID, name, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasons[reasonKey{uid, name}] = v1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (s *Syncer) clearReason(uid types.UID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reasons, reasonKey{uid, name})
}

func (s *Syncer) event(pod *v1.Pod, eventtype, reason, format string, args ...interface{}) {
	if s.recorder != nil {
		s.recorder.Eventf(pod, eventtype, reason, format, args...)
	}
}

// podDesc formats a pod as upstream does in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
