package podsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ErrMissingDependency is wrapped by New's error when a required dependency
// is missing.
var ErrMissingDependency = errors.New("missing dependency")

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

// VolumeHostPaths gives the host directory of each of a pod's volumes,
// volume name → host path; nil means the pod has none mounted.
type VolumeHostPaths interface {
	VolumeHostPaths(pod *v1.Pod) (map[string]string, error)
}

// VolumeHostPathsFunc adapts a function to VolumeHostPaths.
type VolumeHostPathsFunc func(pod *v1.Pod) (map[string]string, error)

// VolumeHostPaths calls f.
func (f VolumeHostPathsFunc) VolumeHostPaths(pod *v1.Pod) (map[string]string, error) { return f(pod) }

var _ VolumeHostPaths = VolumeHostPathsFunc(nil)

// ContainerMounts is an optional interface of Options.Volumes: a volume
// manager that builds a container's CRI mounts itself (subPaths resolved
// against symlinks, read-only volumes, propagation), as volume.Manager
// does. When Volumes has it, the Syncer uses it instead of joining host
// paths and subPaths itself. An error with a StatusMessage() string method
// (volume.SubPathError) gives the message of the container's
// CreateContainerConfigError and of its Failed event; SyncPod returns the
// whole error.
type ContainerMounts interface {
	Mounts(pod *v1.Pod, container *v1.Container) ([]*runtimeapi.Mount, error)
}

// ContainerDevices adds to a container's CRI config what the devices
// allocated to it need: environment variables, mounts, device nodes, CDI
// devices, annotations (devices.Manager does, from the device plugins'
// answers). It is called for each container created; an error fails the
// container's creation with CreateContainerConfigError.
type ContainerDevices interface {
	ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error
}

// ConfigMapGetter gives the configMaps that containers' environments
// reference (envFrom, configMapKeyRef). A missing one is an error for which
// apimachinery's errors.IsNotFound holds. volume.StaticSources and the
// examples' API-server adapters satisfy it.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
}

// SecretGetter gives the secrets that containers' environments reference
// (envFrom, secretKeyRef); a missing one is a NotFound error.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// DefaultLogRoot is where pod log directories live by default.
const DefaultLogRoot = "/var/log/pods"

// Options configures a Syncer. Runtime is required; every other zero value
// is the documented default.
type Options struct {
	// Runtime is the CRI runtime. Required.
	Runtime Runtime
	// Probes gives liveness and startup results (nil: none failed).
	Probes Probes
	// Volumes gives the host paths of pod volumes (nil: no pod has volumes;
	// a volumeMount then fails with CreateContainerConfigError).
	Volumes VolumeHostPaths
	// ConfigMaps and Secrets resolve environment references to them (nil:
	// a container referencing one fails with CreateContainerConfigError,
	// as upstream's kubelet without an API client does). Values are never
	// logged.
	ConfigMaps ConfigMapGetter
	Secrets    SecretGetter
	// Services gives the services whose variables containers get
	// (ServiceEnv); nil means none, as for upstream's kubelet without an
	// API server.
	Services ServiceLister
	// Devices adds the devices allocated to a container to its config
	// (nil: none).
	Devices ContainerDevices
	// Recorder receives events (nil: none).
	Recorder EventRecorder
	// Clock drives backoffs (nil: the real clock).
	Clock clock.Clock
	// Logger (nil: discard).
	Logger *slog.Logger
	// LogRoot is the root of pod log directories (empty: DefaultLogRoot).
	LogRoot string
	// ContainerLogLinksDir, when set, gets a symbolic link to each started
	// container's log file, named <pod>_<namespace>_<container>-<id>.log,
	// as upstream kubelet keeps /var/log/containers
	// (DefaultContainerLogLinksDir) for log collectors. A link goes when
	// its container is removed, or at garbage collection once its file is
	// gone. Empty: no links.
	ContainerLogLinksDir string
	// PodsDir is the kubelet's pods directory (upstream's
	// /var/lib/kubelet/pods). When set, each container whose spec has a
	// terminationMessagePath gets an empty file
	// PodsDir/<uid>/containers/<name>/<restartCount> mounted there, and
	// each container of a pod with an IP (or on the host's network) gets
	// the pod's hosts file, PodsDir/<uid>/etc-hosts, at /etc/hosts, as
	// upstream does. Empty: neither mount.
	PodsDir string
	// NodeHostsFile is the node's hosts file, which a host-network pod's
	// hosts file copies (empty: /etc/hosts).
	NodeHostsFile string
	// RuntimeHandler is passed to RunPodSandbox when the pod names no
	// runtime class ("" is the runtime's default).
	RuntimeHandler string
	// NodeName and HostIPs feed spec.nodeName (when the pod has none) and
	// status.hostIP(s) of the downward API.
	NodeName string
	HostIPs  []string
	// RecursiveReadOnlyMounts tells whether the runtime handler (the pod's
	// runtime class, else RuntimeHandler) makes read-only mounts read-only
	// recursively; nil means no. A volumeMount asking for recursiveReadOnly
	// Enabled where it cannot is a CreateContainerConfigError, IfPossible
	// then means plain read-only, as upstream.
	RecursiveReadOnlyMounts func(handler string) bool
	// NodeAllocatable is what a container's unset limits.cpu, limits.memory
	// and limits.ephemeral-storage read as in the downward API (upstream's
	// default: the node's allocatable). Nil: such a reference fails with
	// CreateContainerConfigError.
	NodeAllocatable v1.ResourceList
	// ClusterDNS and ClusterDomain configure DNS for the ClusterFirst
	// policy (empty: the runtime's resolv.conf is left alone).
	ClusterDNS    []string
	ClusterDomain string
	// BackoffInitial and BackoffMax are the crash-loop and image pull
	// backoff delays (zero: DefaultBackoffInitial, DefaultBackoffMax).
	BackoffInitial, BackoffMax time.Duration
	// SeccompProfileRoot is the directory a Localhost seccomp profile's
	// name is resolved in (upstream's <root-dir>/seccomp); a name that is
	// absolute or climbs out with ".." is refused. Empty:
	// DefaultSeccompProfileRoot.
	SeccompProfileRoot string
	// SeccompDefault runs containers whose pod and container name no
	// seccomp profile under the runtime's default profile (RuntimeDefault)
	// instead of Unconfined: upstream's seccompDefault, off by default.
	SeccompDefault bool
	// UserNamespaces tells whether a runtime handler (the pod's runtime
	// class, else RuntimeHandler) supports user namespaces, as the
	// runtime's status reports it (handler features). A pod with
	// hostUsers: false gets a user namespace of its own, with 65536 host
	// IDs kept for it alone (recorded under PodsDir), only where it is
	// supported; elsewhere its sandbox is refused with upstream's message.
	// Nil: no handler supports them.
	UserNamespaces func(handler string) bool
	// RuntimeClasses looks up the pods' runtime classes: a pod's sandbox
	// runs under its class's handler, and a class that does not exist
	// fails the sandbox (CreatePodSandboxError), as upstream's. Nil: the
	// class's name is the handler.
	RuntimeClasses RuntimeClasses
	// Cgroups gives each sandbox its cgroup parent, the pod's cgroup
	// (package cgroups). Nil: none, the runtime's default.
	Cgroups SandboxCgroups
	// PodCgroups resizes the pod's own cgroup around an in-place resize
	// of its containers (package cgroups). Nil: only the containers are
	// resized.
	PodCgroups PodCgroupResizer
	// MemorySwapController says the node's cgroups account swap (cgroup
	// v1's memory.memsw, v2's memory.swap.max): each container's swap
	// limit is then its memory limit, at creation and at every in-place
	// resize, so that it never swaps, as upstream's default NoSwap does
	// (and cgroup v1 refuses a memory limit above the swap limit).
	MemorySwapController bool
	// MemoryCapacity is the node's memory in bytes, against which a
	// Burstable container's oom_score_adj is computed (OOMScoreAdj). Zero
	// gives every Burstable container 999.
	MemoryCapacity int64
}

// Syncer drives pods through the CRI: SyncPod, KillPod and
// GarbageCollect. Its methods are safe for concurrent use on different pods;
// calls for one pod must be serialized by the caller (the pod worker does).
type Syncer struct {
	rt       Runtime
	probes   Probes
	volumes  VolumeHostPaths
	recorder EventRecorder
	clock    clock.Clock
	log      *slog.Logger
	opts     Options

	mu           sync.Mutex
	crashBackoff *backoff
	pullBackoff  *backoff
	reasons      map[reasonKey]v1.ContainerStateWaiting
	userns       userNamespaces
}

type reasonKey struct {
	uid  types.UID
	name string
}

// New returns a Syncer. It fails, wrapping ErrMissingDependency, without a
// Runtime.
func New(opts Options) (*Syncer, error) {
	if opts.Runtime == nil {
		return nil, fmt.Errorf("podsync: runtime: %w", ErrMissingDependency)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LogRoot == "" {
		opts.LogRoot = DefaultLogRoot
	}
	if opts.BackoffInitial <= 0 {
		opts.BackoffInitial = DefaultBackoffInitial
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.SeccompProfileRoot == "" {
		opts.SeccompProfileRoot = DefaultSeccompProfileRoot
	}
	return &Syncer{
		rt: opts.Runtime, probes: opts.Probes, volumes: opts.Volumes, recorder: opts.Recorder,
		clock: opts.Clock, log: opts.Logger, opts: opts,
		crashBackoff: newBackoff(opts.Clock, opts.BackoffInitial, opts.BackoffMax),
		pullBackoff:  newBackoff(opts.Clock, opts.BackoffInitial, opts.BackoffMax),
		reasons:      map[reasonKey]v1.ContainerStateWaiting{},
	}, nil
}

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
// backoffs, and the host IDs of its user namespace.
func (s *Syncer) RemovePod(uid types.UID) {
	s.userns.release(s.opts.PodsDir, uid)
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

// LogDirectory returns the pod's log directory under root:
// root/<namespace>_<name>_<uid>.
func LogDirectory(root string, pod *v1.Pod) string {
	return filepath.Join(root, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// podDesc formats a pod as upstream does in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
