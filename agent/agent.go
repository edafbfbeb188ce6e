package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
	"github.com/kubeletkit/kubeletkit/volume"
)

// The status Manager lends the prober its statuses rather than copying one
// for every probe turn.
var _ prober.StatusViewer = (*status.Manager)(nil)

// Runtime is the container runtime the agent drives: the CRI client from
// cri.Dial, the in-process *fake.Runtime, or any implementation of both
// services.
type Runtime interface {
	cri.RuntimeService
	cri.ImageService
}

// Clock is the time the agent and every block it builds read: the union of
// what the blocks need. clock.RealClock and the fake clocks of
// k8s.io/utils/clock/testing implement it.
type Clock = clock.WithTickerAndDelayedExecution

// Timings shortens the agent's periods, for tests and demonstrations. Every
// zero field is upstream's default.
type Timings struct {
	// RelistPeriod is the PLEG's relist period (1s).
	RelistPeriod time.Duration
	// SourcePeriod is how often the manifest directory and URL are read
	// again (20s).
	SourcePeriod time.Duration
	// BackoffInitial and BackoffMax are the crash-loop and image-pull
	// backoffs (10s doubling to 5m).
	BackoffInitial, BackoffMax time.Duration
	// WorkerBackOff is how long after a failed sync a pod is synced again
	// (10s, plus up to 50% jitter).
	WorkerBackOff time.Duration
	// Resync is how long after a successful sync a pod is synced again
	// (1m, plus up to 50% jitter).
	Resync time.Duration
	// Housekeeping is the period of pod cleanups (2s).
	Housekeeping time.Duration
	// NodeStatus is how often the node's status is built (10s).
	NodeStatus time.Duration
	// VolumeRefresh is how often configMap, secret, downwardAPI and
	// projected volumes are written again from their sources (1m).
	VolumeRefresh time.Duration
	// ImageGC is the period of image garbage collection (5m).
	ImageGC time.Duration
}

// Options configure an Agent. The zero value runs the embedded fake runtime
// on the real clock with no pod source, under the root directory
// /tmp/minikubelet, standalone: statuses are kept in memory, the node's
// status is built but sent nowhere, events are logged.
//
// Everything an API server provides comes in through the interfaces below;
// the module's examples/apiserver implements them with client-go.
type Options struct {
	// Clock is the time of the agent and of every block. Nil means the real
	// clock. With a fake clock, nothing the agent composes reads the real
	// time (agent/agenttest steps one).
	Clock Clock
	// Rand returns a pseudo-random number in [0, 1) for the jitter of pod
	// resyncs, retries and probes' first runs. Nil means math/rand/v2.
	Rand func() float64
	// Runtime is the container runtime. Nil means an embedded fake runtime
	// (NewFakeRuntime) on Clock.
	Runtime Runtime
	// NodeName names the node; it suffixes static pods' names. Empty means
	// the host name, lower-cased.
	NodeName string
	// HostIPs are the node's IPs, primary first. Empty means the first
	// non-loopback address of the machine, or 127.0.0.1.
	HostIPs []string
	// ReportHostIPs puts HostIPs in pod statuses (hostIP, hostIPs). Upstream
	// kubelet does so when it has an API server, and so a Node; standalone,
	// pod statuses have no hostIP.
	ReportHostIPs bool
	// RootDir holds the pods' data directories (RootDir/pods/<uid>) and,
	// unless PodLogsDir says otherwise, their logs (RootDir/logs). Empty
	// means /tmp/minikubelet.
	RootDir string
	// PodLogsDir is the directory of the containers' log files
	// (<namespace>_<name>_<uid>/<container>/<restart>.log), upstream's
	// podLogsDir, which is /var/log/pods there. Empty means RootDir/logs.
	PodLogsDir string
	// AllowedUnsafeSysctls are the sysctls beyond the safe set a pod may
	// set, by name or by prefix ending in "*" (upstream's
	// allowedUnsafeSysctls); each must belong to a group the kernel
	// namespaces (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*,
	// net.*). A pod setting any other sysctl is refused (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// SeccompDefault runs the containers of pods that name no seccomp
	// profile under the runtime's default profile (RuntimeDefault) instead
	// of Unconfined: upstream's seccompDefault, off by default as there.
	// Localhost profiles are files under RootDir/seccomp, upstream's
	// <root-dir>/seccomp.
	SeccompDefault bool
	// ContainerLogLinksDir gets a symbolic link to each container's log
	// file, <pod>_<namespace>_<container>-<id>.log, as upstream keeps
	// /var/log/containers for log collectors (podsync.Options). Empty: no
	// links.
	ContainerLogLinksDir string
	// DevicePluginDir is the device plugin directory (package devices):
	// the agent serves the registration socket there (kubelet.sock),
	// reports the plugins' resources in the node's capacity and
	// allocatable, gives containers their devices at admission and keeps
	// the allocations in a checkpoint there. Upstream's is
	// /var/lib/kubelet/device-plugins, where plugins look for it. Empty
	// means no device plugins.
	DevicePluginDir string
	// NoMounts keeps the agent from mounting: secret and projected volumes
	// are written on disk under RootDir instead of a tmpfs, and subPaths are
	// handed to the runtime unpinned. It is always so when the process is
	// not root.
	NoMounts bool
	// ManifestPath is a directory of static pod manifests (or one file);
	// empty means none. It is watched with inotify where the kernel allows
	// (a change is read within milliseconds), else polled every second,
	// and read in full every Timings.SourcePeriod.
	ManifestPath string
	// PollManifests polls ManifestPath every second instead of watching it:
	// for a fake clock, on which the kernel's notifications would arrive
	// outside the simulated time (agenttest sets it), and for file systems
	// whose changes inotify does not see.
	PollManifests bool
	// ManifestURL is an HTTP URL serving a pod or a pod list; empty means
	// none.
	ManifestURL string
	// Updates are pods from an API server (the source named "api"): SET,
	// ADD, UPDATE, DELETE, REMOVE and RECONCILE, merged with the static
	// pods. Nil means none. Unlike static pods, these pods can be evicted,
	// as upstream protects static pods from eviction. The agent reads it
	// until Run returns; closing it ends the source, not the agent.
	Updates <-chan syncloop.PodUpdate
	// StatusSink receives pod statuses (an API server's pods/status). Nil
	// keeps them in memory, a static pod standing for its own mirror pod.
	StatusSink status.Sink
	// NodeStatusSink receives the node's status, and Leases its lease (an
	// API server's Node and Lease). Nil means none: the status is still
	// built, for NodeStatus and the pressure conditions.
	NodeStatusSink node.StatusSink
	// Leases renews the node's lease every quarter of LeaseDuration. Nil
	// means no lease.
	Leases node.LeaseSink
	// LeaseDuration is the node lease's duration; 0 means upstream's 40s.
	LeaseDuration time.Duration
	// DeclaredFeatures are the features the node declares in its status
	// (status.declaredFeatures, upstream's NodeDeclaredFeatures), listed
	// sorted, once each; empty leaves the field unset. The API server reads
	// them: ExtendWebSocketsToKubelet makes it send kubectl's WebSockets on
	// to the node, which must then serve them (API.WebSockets), so New
	// refuses the one without the other. A name the API server would refuse
	// fails New too.
	DeclaredFeatures []string
	// MirrorPods keeps the API server's mirror pods in step with the static
	// pods at every housekeeping. Nil means none.
	MirrorPods MirrorPods
	// Recorder receives every event the blocks record (client-go's
	// record.EventRecorder fits). Events are also logged. Nil means logged
	// only.
	Recorder EventRecorder
	// Metrics receives the agent's measurements. Nil means none.
	Metrics Metrics
	// ObjectPath is a directory of ConfigMap and Secret manifests (one
	// object per file, YAML or JSON) that pods' configMap, secret and
	// projected volumes and their environment read, re-read every
	// SourcePeriod; empty means none. Ignored when VolumeSources is set.
	// With it, static pods may reference configMaps and secrets (an
	// extension: upstream's kubelet refuses such manifests, and so does
	// the agent without ObjectPath).
	ObjectPath string
	// VolumeSources give configMaps, secrets and service account tokens to
	// the pods' volumes and environment. Empty means the objects of
	// ObjectPath, and no tokens.
	VolumeSources volume.Sources
	// Services lists the services whose variables containers get
	// (KUBERNETES_SERVICE_HOST ...). Nil means none.
	Services containerconfig.ServiceLister
	// Machine describes the node's hardware for its status. Nil means this
	// machine (node.LocalMachine, its ephemeral storage the filesystem of
	// RootDir).
	Machine node.Machine
	// KubeReserved and SystemReserved are resources kept for the node's
	// own daemons and the system (upstream's kubeReserved and
	// systemReserved: cpu, memory, ephemeral-storage, pid): they are taken
	// off the capacity, with the hard eviction thresholds of memory.available
	// and nodefs.available, to give the allocatable resources the node
	// reports and admits pods against. Nothing is enforced on cgroups.
	KubeReserved, SystemReserved v1.ResourceList
	// CgroupsPerQOS puts the pods in upstream's cgroup hierarchy (package
	// cgroups, upstream's cgroupsPerQOS): kubepods, limited to the node's
	// capacity (less KubeReserved and SystemReserved with
	// EnforceNodeAllocatable "pods"), kubepods/burstable and
	// kubepods/besteffort, and a cgroup per pod with its CPU shares, quota
	// and memory limit, created before its sandbox (its cgroup parent) and
	// removed once its containers are gone. Only the pod cgroups this agent
	// made (recorded under RootDir/cgroups) are ever removed; another
	// agent's on the same host are left alone. Off by default here
	// (upstream's default is on); it needs root.
	CgroupsPerQOS bool
	// CgroupDriver is upstream's cgroupDriver: "" or "cgroupfs", or
	// "systemd": the hierarchy as systemd slices (kubepods.slice,
	// kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice) created
	// over systemd's D-Bus API, as upstream's (package cgroups); Run
	// connects to the machine's systemd. The runtime must use the same
	// driver: the sandboxes' cgroup parent is spelled as this one spells it.
	CgroupDriver string
	// CgroupRoot is the cgroup the hierarchy goes under (upstream's
	// cgroupRoot); empty means "/". Agents that share a host should each
	// have their own.
	CgroupRoot string
	// CgroupFS is where the cgroup file system is mounted; empty means
	// /sys/fs/cgroup.
	CgroupFS string
	// EnforceNodeAllocatable is upstream's enforceNodeAllocatable: "pods"
	// limits kubepods to the node's allocatable (capacity less
	// KubeReserved and SystemReserved) instead of its capacity, and needs
	// CgroupsPerQOS; "none" or empty enforces nothing. "system-reserved"
	// and "kube-reserved" (and their "-compressible" forms) are refused:
	// they need cgroups of the reserved daemons the agent does not manage.
	EnforceNodeAllocatable []string
	// RuntimeClasses looks up the pods' runtime classes: the handler a
	// pod's sandbox runs under, and the overhead of a pod that has none in
	// its spec (containerconfig.Options.RuntimeClasses). Nil: a runtime class's
	// name is its handler, and only a pod's own overhead counts.
	RuntimeClasses containerconfig.RuntimeClasses
	// NodeLabels are labels of the node beside those it has of its own
	// (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and
	// their beta spellings), for the nodeSelector and node affinity of the
	// pods admitted when Node is nil.
	NodeLabels map[string]string
	// Node gives the Node object pods are admitted to, the API server's:
	// its labels for nodeSelector and node affinity, its taints. Its
	// allocatable resources are always the agent's own. Nil, or an error
	// from it, means the agent's own Node: its name and labels
	// (NodeLabels) and no taints. examples/apiserver's Join sets it.
	Node admission.NodeGetter
	// Listen is the address of the read-only HTTP server (upstream's
	// read-only port, package server without authentication: /healthz,
	// /pods, /node, /stats/summary, /metrics); empty means none. ":0"
	// picks a free port; Addr tells which.
	Listen string
	// MetricsHandler serves /metrics on that server and on the kubelet API
	// (examples/prometheus has one over Metrics); nil means no /metrics.
	MetricsHandler http.Handler
	// ResourceMetricsHandler serves /metrics/resource on both servers
	// (examples/prometheus has one over the agent's Summary); nil means
	// no such endpoint.
	ResourceMetricsHandler http.Handler
	// HealthChecks are /healthz's checks after the agent's own (ping,
	// syncloop, pleg) on both servers; examples/apiserver's Joined adds
	// "apisource", which says when the pods come from the local state.
	HealthChecks []server.HealthCheck
	// ContainerLogMaxSize is the size at which a running container's log
	// is rotated (upstream's containerLogMaxSize); 0 means 10Mi, negative
	// turns rotation off. ContainerLogMaxFiles is how many files a
	// container's log may have, the live one included
	// (containerLogMaxFiles); 0 means 5.
	ContainerLogMaxSize  int64
	ContainerLogMaxFiles int
	// API serves the kubelet API: kubectl logs, exec, attach,
	// port-forward and cp, the stats summary (kubectl top through
	// metrics-server), over TLS with authentication and authorization.
	// Nil means none.
	API *APIOptions
	// Out receives one line per change of a pod's phase or container
	// states; nil means none.
	Out io.Writer
	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
	// EventedPLEG follows the runtime's container events (CRI
	// GetContainerEvents) with a slow relist as a safety net, instead of
	// relisting every second: upstream's EventedPLEG feature. Pods turn
	// Running and Ready sooner; containerd 1.7+ and the fake support it.
	EventedPLEG bool
	// Eviction configures node-pressure eviction.
	Eviction EvictionOptions
	// ImageGC is the image garbage collection policy; the zero value is
	// upstream's (imagegc.DefaultPolicy: at 85% of the image filesystem
	// used, remove the least recently used images down to 80%; never an
	// image first seen less than 2m ago). Collection runs every
	// Timings.ImageGC on the image filesystem that Eviction.Stats (or the
	// machine) measures, and under disk pressure eviction removes every
	// unused image first.
	ImageGC imagegc.Policy
	// Shutdown is graceful node shutdown (upstream's shutdownGracePeriod
	// and shutdownGracePeriodCriticalPods): what a shutdown does, and what
	// triggers it besides Agent.Shutdown. The zero value leaves it off.
	Shutdown ShutdownOptions
	// Timings overrides default periods.
	Timings Timings
}

// EventRecorder records events about objects; client-go's
// record.EventRecorder has this method.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// MirrorPods keeps an API server's mirror pods in step with the static pods:
// it creates the missing, recreates the outdated and deletes the orphaned,
// as upstream's housekeeping does. examples/apiserver.MirrorPods implements
// it.
type MirrorPods interface {
	SyncMirrorPods(ctx context.Context, staticPods, mirrorPods []*v1.Pod) error
}

// Metrics receives the agent's measurements, for an adapter to expose under
// upstream kubelet's metric names (examples/prometheus does, with
// client_golang). Methods are called from the agent's goroutines, must be
// safe for concurrent use and must not block.
type Metrics interface {
	pleg.Metrics
	podworkers.Metrics
	// PodStartDuration observes how long after the agent first saw a pod it
	// was first Running (kubelet_pod_start_duration_seconds).
	PodStartDuration(d time.Duration)
	// Event counts an event the agent recorded.
	Event(eventtype, reason string)
}

// lifecycle is what the agent needs of either PLEG.
type lifecycle interface {
	Run(ctx context.Context) error
	Relist(ctx context.Context) error
	Healthy() (bool, error)
	InspectPod(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error)
}

// Agent is a node agent composed of the kubeletkit blocks. Build one with
// New and start it with Run.
type Agent struct {
	opts Options
	// appArmor: the host enforces AppArmor (admission.AppArmor).
	appArmor bool
	// sysctls admits the sysctls pods set.
	sysctls *admission.Sysctls
	// admission is the chain of admission handlers (newAdmission).
	admission admission.Chain
	// allocatable: the node's allocatable at the start, the downward API's
	// default limits.
	allocatable v1.ResourceList
	// unsettled: pods rejected before the first housekeeping (mu).
	unsettled []types.UID
	log       *slog.Logger
	clock     Clock
	rt        Runtime
	fakeRT    *fake.Runtime
	runtime   string // runtime name for container IDs
	metrics   Metrics
	events    *recorder // every block's EventRecorder

	cache   *pleg.Cache
	pleg    lifecycle
	syncer  *podsync.Syncer
	workers *podworkers.Workers
	status  *status.Manager
	prober  *prober.Manager
	pods    *syncloop.PodSet
	config  *source.Config
	loop    *syncloop.Loop
	evict   *eviction.Manager // nil when disabled
	imageGC *imagegc.Manager
	node    *node.Controller
	vol     *volume.Manager
	cgroups *cgroups.Manager      // nil without CgroupsPerQOS
	devices *devices.Manager      // nil without DevicePluginDir
	objects *volume.StaticSources // configMaps and secrets from ObjectPath
	sink    *memorySink
	msgs    status.MessageReader
	alloc   *allocation.Manager // the pods' allocated resources and their resizes

	// shutdown is graceful node shutdown; not Enabled without a grace
	// period.
	shutdown *nodeshutdown.Manager

	// stats measures the node (Eviction.Stats or the machine's); nil, with
	// statsErr saying why, where there is no measurement.
	stats    stats.Provider
	statsErr error
	// api is the node behind the kubelet API and the read-only server.
	api *nodeAPI

	listener    net.Listener
	apiListener net.Listener  // the kubelet API's; nil when none
	ready       chan struct{} // closed once Run has started everything

	mu       sync.Mutex
	cleanups int
	rejected map[types.UID]struct{} // pods refused at admission
	seen     map[types.UID]struct{} // pods added and not yet forgotten
	latency  map[types.UID]*startup
	admitted uint64 // pods added so far, numbering startup.seq

	rotator *logs.Rotator // the containers' logs

	// forgetters forget a finished pod that is no longer desired, at
	// housekeeping.
	forgetters []podForgetter
}

// podForgetter is a part of the node that keeps something per pod and
// forgets it once the pod is finished and no longer desired.
type podForgetter interface{ RemovePod(uid types.UID) }

// forgetFunc adapts a function to podForgetter.
type forgetFunc func(uid types.UID)

// RemovePod calls f.
func (f forgetFunc) RemovePod(uid types.UID) { f(uid) }

// startup is when the agent first saw a pod, and how long it took to run
// and to turn Ready.
type startup struct {
	added                time.Time
	seq                  uint64        // admission order, for the start gate
	ready                time.Duration // how long after added it turned Ready
	wasRunning, wasReady bool
}

// ErrInvalidOptions is wrapped by New's errors for options it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// New builds an agent; it starts nothing and touches no disk.
func New(opts Options) (*Agent, error) {
	if opts.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("agent: node name: %w", err)
		}
		opts.NodeName = h
	}
	opts.NodeName = lowerDNS(opts.NodeName)
	if opts.RootDir == "" {
		opts.RootDir = "/tmp/minikubelet"
	}
	if !filepath.IsAbs(opts.RootDir) {
		abs, err := filepath.Abs(opts.RootDir)
		if err != nil {
			return nil, fmt.Errorf("agent: root dir %q: %w", opts.RootDir, err)
		}
		opts.RootDir = abs
	}
	if len(opts.HostIPs) == 0 {
		opts.HostIPs = []string{hostIP()}
	}
	if opts.LeaseDuration < 0 || opts.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("agent: LeaseDuration %s is not a positive number of seconds: %w", opts.LeaseDuration, ErrInvalidOptions)
	}
	if slices.Contains(opts.DeclaredFeatures, ExtendWebSocketsToKubelet) && (opts.API == nil || opts.API.WebSockets == nil) {
		return nil, fmt.Errorf("agent: the node declares %s, and its kubelet API has no WebSockets to serve them: %w",
			ExtendWebSocketsToKubelet, ErrInvalidOptions)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Machine == nil {
		opts.Machine = node.LocalMachine{StorageDir: opts.RootDir}
	}
	for _, l := range []v1.ResourceList{opts.KubeReserved, opts.SystemReserved} {
		for name, q := range l {
			if q.Sign() < 0 {
				return nil, fmt.Errorf("agent: reserved %s %s is negative: %w", name, q.String(), ErrInvalidOptions)
			}
		}
	}
	if err := checkCgroupOptions(&opts); err != nil {
		return nil, err
	}
	if !opts.NoMounts && os.Geteuid() != 0 {
		opts.NoMounts = true
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sysctls, err := admission.NewSysctls(opts.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{opts: opts, log: log, clock: opts.Clock, rt: opts.Runtime, metrics: opts.Metrics, sysctls: sysctls,
		ready: make(chan struct{}), rejected: map[types.UID]struct{}{}, seen: map[types.UID]struct{}{}, latency: map[types.UID]*startup{},
		appArmor: admission.HostAppArmorEnabled()}
	if a.metrics == nil {
		a.metrics = noMetrics{}
	}
	a.events = &recorder{metrics: a.metrics, next: opts.Recorder, log: log}
	if a.rt == nil {
		a.fakeRT = NewFakeRuntime(opts.Clock, log.With("component", "fake-runtime"))
		a.rt = a.fakeRT
	}
	a.pods = syncloop.NewPodSet()
	a.sink = newMemorySink(opts.Out, opts.StatusSink)
	a.msgs = status.FileMessageReader{PodsDir: a.podsDir(), LogsDir: a.logsDir()}
	a.cache = pleg.NewCache()
	if err := a.build(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return a, nil
}

// build makes the blocks, each on the agent's clock and logger.
func (a *Agent) build() error {
	opts, log := a.opts, a.log
	var err error
	if err = a.newAllocation(); err != nil {
		return err
	}
	if opts.EventedPLEG {
		a.pleg, err = pleg.NewEvented(pleg.EventedOptions{Runtime: a.rt, Cache: a.cache, Clock: a.clock,
			Logger: log.With("component", "pleg"), Metrics: a.metrics, OnEvents: a.handlePLEGEvents})
	} else {
		a.pleg, err = pleg.NewGeneric(pleg.GenericOptions{Runtime: a.rt, Cache: a.cache, Clock: a.clock,
			Logger: log.With("component", "pleg"), Metrics: a.metrics, RelistPeriod: opts.Timings.RelistPeriod,
			OnEvents: a.handlePLEGEvents})
	}
	if err != nil {
		return err
	}
	a.status, err = status.New(status.Options{Sink: a.sink, Clock: a.clock,
		DeletionSafety: status.PodDeletionSafetyFunc(func(uid types.UID) bool { return a.workers.CouldHaveRunningContainers(uid) }),
		Pods:           a.pods, Logger: log.With("component", "status")})
	if err != nil {
		return err
	}
	a.prober, err = prober.New(prober.Options{Runner: a.countingProber(prober.NewRunner(prober.RunnerOptions{Execer: a.rt})), Status: a.status,
		Clock: a.clock, Jitter: func(p time.Duration) time.Duration { return time.Duration(a.opts.Rand() * float64(p)) },
		Recorder: a.events, Logger: log.With("component", "prober")})
	if err != nil {
		return err
	}
	// Read once: the downward API's default limits.
	var memoryCapacity int64
	if capacity, err := a.opts.Machine.Capacity(context.Background()); err != nil {
		a.log.Warn("Cannot read the node's capacity: a container's unset limits read through the downward API fail", "err", err)
	} else {
		a.allocatable = node.Allocatable(capacity, a.reservation(capacity))
		memoryCapacity = capacity.Memory().Value()
	}
	if a.vol, err = a.newVolumes(); err != nil {
		return err
	}
	if err := a.newDevices(); err != nil {
		return err
	}
	if err := a.newCgroups(); err != nil {
		return err
	}
	var sandboxCgroups containerconfig.SandboxCgroups
	var podCgroups podsync.PodCgroupResizer
	if a.cgroups != nil {
		sandboxCgroups, podCgroups = a.cgroups, podCgroupResizer{a}
	}
	cms, secrets := a.envSources()
	a.syncer, err = podsync.New(podsync.Options{
		Runtime: pullPausing{a.rt}, Recorder: a.events, Logger: log.With("component", "podsync"), Clock: a.clock,
		Config: containerconfig.Options{
			Volumes: a.vol, ConfigMaps: cms, Secrets: secrets, Services: opts.Services, NodeAllocatable: a.allocatable,
			RecursiveReadOnlyMounts: a.handlerSupportsRecursiveReadOnly,
			Devices:                 a.containerDevices(),
			UserNamespaces:          a.handlerSupportsUserNamespaces,
			SeccompDefault:          opts.SeccompDefault, SeccompProfileRoot: filepath.Join(opts.RootDir, "seccomp"),
			Cgroups: sandboxCgroups, RuntimeClasses: opts.RuntimeClasses,
			MemorySwapController: a.fakeRT == nil && memorySwapController(), MemoryCapacity: memoryCapacity,
			LogRoot: a.logsDir(), PodsDir: a.podsDir(), NodeName: opts.NodeName, HostIPs: opts.HostIPs,
		},
		PodCgroups: podCgroups,
		Probes: podsync.Probes{
			Liveness:         podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Liveness().Get(id); return ok && r == prober.Failure }),
			Startup:          podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Failure }),
			StartupSucceeded: func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Success },
		},
		ContainerLogLinksDir: opts.ContainerLogLinksDir,
		BackoffInitial:       opts.Timings.BackoffInitial, BackoffMax: opts.Timings.BackoffMax,
	})
	if err != nil {
		return err
	}
	a.workers, err = podworkers.New(podworkers.Options{
		Syncer:       a,
		Clock:        a.clock,
		StatusWaiter: podworkers.StatusWaiterFunc(a.waitFresh),
		Logger:       log.With("component", "podworkers"),
		Metrics:      a.metrics,
		// The final status a terminating pod's sync wrote had its terminal
		// phase held back while the workers still counted its containers;
		// it is written as soon as they stop counting them.
		Terminated: a.status.PushAgain,
		// Starting pods sync 16 at a time, oldest first.
		StartGate: podworkers.NewStartGate(podworkers.DefaultStartSlots),
		Starting:  a.starting,
		Machine:   podworkers.MachineOptions{ResyncInterval: opts.Timings.Resync, BackOffPeriod: opts.Timings.WorkerBackOff, Rand: opts.Rand},
	})
	if err != nil {
		return err
	}
	if a.stats = opts.Eviction.Stats; a.stats == nil {
		a.stats, a.statsErr = a.machineStats()
	}
	if a.imageGC, err = a.newImageGC(); err != nil {
		return err
	}
	if !opts.Eviction.Disabled {
		if a.evict, err = a.newEviction(); err != nil {
			return err
		}
	}
	if a.shutdown, err = a.newShutdown(); err != nil {
		return err
	}
	if a.admission, err = a.newAdmission(); err != nil {
		return err
	}
	a.api = &nodeAPI{rt: a.rt, pods: a.pods, status: a.status, clock: a.clock}
	a.newSummary()
	if a.rotator, err = logs.NewRotator(logs.RotatorOptions{Runtime: a.rt, Clock: a.clock, MaxSize: opts.ContainerLogMaxSize,
		MaxFiles: opts.ContainerLogMaxFiles, Logger: log.With("component", "container-logs")}); err != nil {
		return err
	}
	if a.node, err = a.newNodeStatus(); err != nil {
		return err
	}
	// What each part keeps of a pod, forgotten at housekeeping once the pod
	// is finished and no longer desired.
	a.forgetters = []podForgetter{a.alloc, forgetFunc(a.status.Remove), a.syncer,
		forgetFunc(a.sink.forget), a.vol, forgetFunc(a.forgetProbeMetrics)}
	a.config = source.NewConfig(source.ConfigOptions{Logger: log.With("component", "config"), Recorder: a.events, NodeName: opts.NodeName, Clock: a.clock})
	a.loop, err = syncloop.New(syncloop.Options{
		Handler:   a,
		Clock:     a.clock,
		Updates:   a.config.Updates(),
		Liveness:  a.prober.Liveness().Updates(),
		Readiness: a.prober.Readiness().Updates(),
		Startup:   a.prober.Startup().Updates(),
		// Readiness reaches the status of a pod whose worker is busy
		// terminating it.
		ProbeStatus: a.status,
		Pods:        a.pods,
		PodsToSync:  a.podsToSync,
		RuntimeHealthy: func() error {
			if ok, err := a.pleg.Healthy(); !ok {
				return err
			}
			return nil
		},
		SourcesReady:       func() bool { return a.config.SeenAllSources(a.sources()...) },
		HousekeepingPeriod: opts.Timings.Housekeeping,
		Logger:             log.With("component", "syncloop"),
	})
	return err
}

// sources are the names of the configured pod sources.
func (a *Agent) sources() []string {
	var s []string
	if a.opts.ManifestPath != "" {
		s = append(s, syncloop.SourceFile)
	}
	if a.opts.ManifestURL != "" {
		s = append(s, syncloop.SourceHTTP)
	}
	if a.opts.Updates != nil {
		s = append(s, syncloop.SourceAPI)
	}
	return s
}

func (a *Agent) podsDir() string { return filepath.Join(a.opts.RootDir, "pods") }
func (a *Agent) logsDir() string {
	if a.opts.PodLogsDir != "" {
		return a.opts.PodLogsDir
	}
	return filepath.Join(a.opts.RootDir, "logs")
}

// NodeName returns the node's name.
func (a *Agent) NodeName() string { return a.opts.NodeName }

// Runtime returns the runtime the agent drives.
func (a *Agent) Runtime() Runtime { return a.rt }

// FakeRuntime returns the embedded fake runtime, or nil when the agent
// drives a real one.
func (a *Agent) FakeRuntime() *fake.Runtime { return a.fakeRT }

// Addr returns the HTTP server's address once Run has started it, or nil.
func (a *Agent) Addr() net.Addr {
	select {
	case <-a.ready:
	default:
		return nil
	}
	if a.listener == nil {
		return nil
	}
	return a.listener.Addr()
}

// Ready is closed once Run has started every part of the agent.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Healthy returns nil while the PLEG relists in time and the sync loop is
// not stuck, else the reasons, one per line, as /healthz shows them.
func (a *Agent) Healthy() error {
	var failed []string
	if ok, err := a.pleg.Healthy(); !ok {
		failed = append(failed, fmt.Sprintf("[-]pleg failed: %v", err))
	}
	if err := a.loop.Healthy(); err != nil {
		failed = append(failed, fmt.Sprintf("[-]syncloop failed: %v", err))
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "\n"))
	}
	return nil
}

// NodeStatus returns the node's status as last built (conditions, capacity,
// addresses, node info), and false before the first.
func (a *Agent) NodeStatus() (v1.NodeStatus, bool) { return a.node.Status() }

// Run runs the agent until ctx ends, and returns once every goroutine it
// started has ended. Containers are left running, as a kubelet restart
// leaves them: the next agent adopts them. Run may be called once.
func (a *Agent) Run(ctx context.Context) error {
	for _, d := range []string{a.podsDir(), a.logsDir()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	if a.opts.Listen != "" {
		l, err := net.Listen("tcp", a.opts.Listen)
		if err != nil {
			return fmt.Errorf("agent: listen: %w", err)
		}
		a.listener = l
	}
	closeListeners := func() {
		for _, l := range []net.Listener{a.listener, a.apiListener} {
			if l != nil {
				l.Close()
			}
		}
	}
	if err := a.listenAPI(); err != nil {
		closeListeners()
		return err
	}
	var api *server.Server
	if a.apiListener != nil {
		var err error
		if api, err = a.newAPIServer(); err != nil {
			closeListeners()
			return err
		}
	}
	v, err := a.rt.Version(ctx, "v1")
	if err != nil {
		closeListeners()
		return fmt.Errorf("agent: runtime version: %w", err)
	}
	a.runtime = v.GetRuntimeName()
	// The device checkpoint is read before any pod is admitted, so that
	// running pods keep their devices.
	if a.devices != nil {
		if err := a.devices.Listen(); err != nil {
			closeListeners()
			return fmt.Errorf("agent: %w", err)
		}
	}
	if a.cgroups != nil {
		defer a.cgroups.Close() // the systemd driver's D-Bus connection
	}
	if err := a.startCgroups(ctx); err != nil {
		closeListeners()
		return err
	}
	// One relist before anything starts: the sync loop, which pauses while
	// the PLEG has not relisted, then starts on a known runtime state
	// rather than racing the PLEG's first relist.
	if err := a.pleg.Relist(ctx); err != nil {
		a.log.Warn("First relist failed", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &group{cancel: cancel}
	if a.fakeRT != nil {
		defer a.fakeRT.Close()
	}
	g.go_("pleg", func() error { return a.pleg.Run(ctx) })
	g.go_("podworkers", func() error { return a.workers.Run(ctx) })
	g.go_("status", func() error { return a.status.Run(ctx) })
	g.go_("prober", func() error { return a.prober.Run(ctx) })
	if a.stats != nil {
		g.go_("image-gc", func() error { return a.imageGC.Run(ctx) })
	}
	if a.evict != nil {
		g.go_("eviction", func() error { return a.evict.Run(ctx) })
	}
	g.go_("node-status", func() error { return a.node.Run(ctx) })
	g.go_("container-logs", func() error { return a.rotator.Run(ctx) })
	g.go_("volumes", func() error { return a.vol.Run(ctx) })
	if a.devices != nil {
		g.go_("devices", func() error { return a.devices.Run(ctx) })
	}
	if a.objects != nil && a.opts.ObjectPath != "" {
		l := a.loadObjects()
		g.go_("objects", func() error { return l.run(ctx) })
	}
	err = a.startSources(ctx, g)
	if err == nil && api != nil && a.fakeRT != nil {
		err = a.serveFakeStreaming(ctx, g)
	}
	if err != nil {
		cancel()
		g.wait()
		a.config.Wait()
		closeListeners()
		return err
	}
	g.go_("syncloop", func() error { return a.loop.Run(ctx) })
	if a.listener != nil {
		srv := server.New(server.Options{Pods: a, Node: a, Checks: a.healthChecks(), Stats: a.api, Metrics: a.opts.MetricsHandler,
			ResourceMetrics: a.opts.ResourceMetricsHandler, Logger: a.log.With("component", "http")})
		g.go_("http", func() error { return srv.Serve(ctx, a.listener) })
	}
	if api != nil {
		g.go_("kubelet-api", func() error { return api.Serve(ctx, a.apiListener) })
	}
	if t := a.opts.Shutdown.Trigger; t != nil {
		g.go_("shutdown-trigger", func() error { return t.Run(ctx, a.shutdown) })
	}
	close(a.ready)
	a.log.Info("Agent started", "node", a.opts.NodeName, "rootDir", a.opts.RootDir, "sources", a.sources())
	err = g.wait()
	cancel()
	a.config.Wait()
	return err
}

func (a *Agent) startSources(ctx context.Context, g *group) error {
	if a.opts.ManifestPath != "" {
		f, err := source.NewFile(source.FileOptions{Path: a.opts.ManifestPath, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
			AllowAPIReferences: a.opts.ObjectPath != "", Clock: a.clock, DisableWatch: a.opts.PollManifests,
			Logger: a.log.With("component", "file-source"), Recorder: a.events, Out: a.config.Channel(ctx, syncloop.SourceFile)})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		g.go_("file-source", func() error { return f.Run(ctx) })
	}
	if a.opts.ManifestURL != "" {
		u, err := source.NewURL(source.URLOptions{URL: a.opts.ManifestURL, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
			AllowAPIReferences: a.opts.ObjectPath != "", Clock: a.clock,
			Logger: a.log.With("component", "http-source"), Out: a.config.Channel(ctx, syncloop.SourceHTTP)})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		g.go_("http-source", func() error { return u.Run(ctx) })
	}
	if a.opts.Updates != nil {
		out := a.config.Channel(ctx, syncloop.SourceAPI)
		g.go_("api-source", func() error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case u, ok := <-a.opts.Updates:
					if !ok {
						return nil
					}
					select {
					case out <- u:
					case <-ctx.Done():
						return nil
					}
				}
			}
		})
	}
	return nil
}

// PodStatuses returns the desired pods with their current statuses, as
// /pods serves them, sorted by namespace and name.
func (a *Agent) PodStatuses() []v1.Pod {
	pods := a.pods.GetPods()
	out := make([]v1.Pod, 0, len(pods))
	for _, p := range pods {
		cp := p.DeepCopy()
		if st, ok := a.status.GetPodStatus(p.UID); ok {
			cp.Status = st
		}
		a.mu.Lock()
		_, rejected := a.rejected[p.UID]
		a.mu.Unlock()
		if rejected && cp.Status.Phase != v1.PodFailed {
			// The status manager refused the rejection's status: show it
			// all the same.
			cp.Status.Phase = v1.PodFailed
		}
		out = append(out, *cp)
	}
	sortPods(out)
	return out
}

// group runs named goroutines; the first error cancels the others.
type group struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func (g *group) go_(name string, f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			g.mu.Lock()
			if g.err == nil {
				g.err = fmt.Errorf("%s: %w", name, err)
			}
			g.mu.Unlock()
			g.cancel()
		}
	}()
}

func (g *group) wait() error {
	g.wg.Wait()
	return g.err
}
