package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
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
	cgroups *cgroups.Manager      // nil without Cgroups.PerQOS
	devices *devices.Manager      // nil without Node.DevicePluginDir
	objects *volume.StaticSources // configMaps and secrets from Sources.ObjectPath
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
	runnables   []runnable    // what Run starts, in order (newRunnables)

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
