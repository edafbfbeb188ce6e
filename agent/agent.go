package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podresources"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/server"
	nodestats "github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

// The status Manager lends the prober its statuses rather than copying one
// for every probe turn.
var _ prober.StatusViewer = (*status.Manager)(nil)

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
	// backoffs (10s doubling to 5m; the crash loop's most is
	// Node.MaxContainerRestartPeriod when that is set).
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
	// NodeStatusReport is how often an unchanged node status is pushed
	// all the same (5m; upstream's nodeStatusReportFrequency).
	NodeStatusReport time.Duration
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
//
// It keeps its lifecycle and what its readers read; the decisions are the
// blocks', reached through the roles New gives them: the sync loop's
// handler (handler.go), the pod workers' syncer (syncer.go), the node API
// (api.go) and the event recorder (sink.go).
type Agent struct {
	opts   Options
	log    *slog.Logger
	clock  Clock
	rt     Runtime
	fakeRT *fake.Runtime
	// view reads the desired pods, their workers, statuses and records.
	view     *podView
	pleg     lifecycle
	loop     *syncloop.Loop
	config   *source.Config // the pod sources' merger
	node     *node.Controller
	shutdown *nodeshutdown.Manager
	// api is the node behind the kubelet API and the read-only server.
	api *nodeAPI
	// podResources is the pod-resources API, served with HTTP.PodResources.
	podResources *podresources.Server
	// cgroupMgr manages the pod and QoS cgroups; nil without
	// Cgroups.PerQOS.
	cgroupMgr *cgroups.Manager
	// cgroupStats reads the pod cgroups cgroupMgr names for
	// /metrics/cadvisor; nil without Cgroups.PerQOS.
	cgroupStats *nodestats.CgroupReader

	listener    net.Listener
	apiListener net.Listener       // the kubelet API's; nil when none
	healthz     *server.Healthz    // the healthz port; nil when none
	watchdog    *watchdog.Watchdog // feeds systemd's watchdog; Interval 0 when none
	ready       chan struct{}      // closed once Run has started everything
	ownRoot     bool               // opts.RootDir is New's fresh one, removed when Run returns
	runnables   []runnable         // what Run starts, in order (newRunnables)
	started     time.Time          // when New built it, on clock: /statusz's start
}

// CgroupDriver returns the cgroup driver the node's pod and QoS cgroups
// are managed with: once Run has started them, the runtime's when it
// tells one (upstream's KubeletCgroupDriverFromCRI), else
// Cgroups.Driver; "" without Cgroups.PerQOS. Upstream's /configz shows
// the same.
func (a *Agent) CgroupDriver() string {
	if a.cgroupMgr == nil {
		return ""
	}
	return string(a.cgroupMgr.Driver())
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

// HealthzAddr returns the healthz port's address while it serves, or nil
// (none, not yet, or its port taken).
func (a *Agent) HealthzAddr() net.Addr {
	if a.healthz == nil {
		return nil
	}
	return a.healthz.Addr()
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
func (a *Agent) PodStatuses() []v1.Pod { return a.view.statuses() }

// ReadyLatencies returns, for each pod that turned Ready, how long after
// the agent first saw the pod (its ADD) that happened.
func (a *Agent) ReadyLatencies() map[types.UID]time.Duration { return a.view.records.readyLatencies() }
