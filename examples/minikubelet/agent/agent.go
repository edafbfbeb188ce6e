package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
	"github.com/kubeletkit/kubeletkit/volume"
)

// Runtime is the container runtime the agent drives: the CRI client from
// cri.Dial, or the in-process *fake.Runtime.
type Runtime interface {
	cri.RuntimeService
	cri.ImageService
}

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
// with no pod source, under the root directory /tmp/minikubelet.
type Options struct {
	// Runtime is the container runtime. Nil means an embedded fake runtime
	// (NewFakeRuntime) on the real clock.
	Runtime Runtime
	// NodeName names the node; it suffixes static pods' names. Empty means
	// the host name, lower-cased.
	NodeName string
	// HostIPs are the node's IPs, primary first. Empty means the first
	// non-loopback address of the machine, or 127.0.0.1.
	HostIPs []string
	// RootDir holds the pods' data directories (RootDir/pods/<uid>) and
	// their logs (RootDir/logs). Empty means /tmp/minikubelet.
	RootDir string
	// ManifestPath is a directory of static pod manifests (or one file);
	// empty means none.
	ManifestPath string
	// ManifestURL is an HTTP URL serving a pod or a pod list; empty means
	// none.
	ManifestURL string
	// API joins the agent to an API server (see APIOptions); nil means
	// standalone.
	API *APIOptions
	// APIUpdates are pods from an API-server adapter (the source named
	// "api"): SET, ADD, UPDATE, DELETE, REMOVE and RECONCILE, merged with
	// the static pods. Nil means none. Unlike static pods, these pods can
	// be evicted, as upstream protects static pods from eviction.
	APIUpdates <-chan syncloop.PodUpdate
	// ObjectPath is a directory of ConfigMap and Secret manifests (one
	// object per file, YAML or JSON) that pods' configMap, secret and
	// projected volumes and their environment read, re-read every
	// SourcePeriod; empty means none. Ignored when VolumeSources is set.
	// With it, static pods may reference configMaps and secrets (an
	// extension: upstream's kubelet refuses such manifests, and so does
	// the agent without ObjectPath).
	ObjectPath string
	// VolumeSources give configMaps, secrets and service account tokens to
	// the pods' volumes (an API-server adapter implements them). Empty
	// means the objects of ObjectPath, and no tokens.
	VolumeSources volume.Sources
	// Listen is the address of the HTTP server (/healthz, /pods, /metrics);
	// empty means no server. Use ":0" for any free port; Addr tells which.
	Listen string
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
	// Timings overrides default periods.
	Timings Timings
}

// lifecycle is what the agent needs of either PLEG.
type lifecycle interface {
	Run(ctx context.Context) error
	Events() <-chan pleg.Event
	Healthy() (bool, error)
}

// Agent is a node agent composed of the kubeletkit blocks. Build one with
// New and start it with Run.
type Agent struct {
	opts    Options
	log     *slog.Logger
	clock   clock.WithTicker
	rt      Runtime
	fakeRT  *fake.Runtime
	runtime string // runtime name for container IDs

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
	objects *volume.StaticSources // configMaps and secrets from ObjectPath
	api     *api                  // nil when standalone
	sink    *memorySink
	metrics *metrics
	msgs    status.MessageReader

	// stats measures the node (Eviction.Stats or the machine's); nil, with
	// statsErr saying why, where there is no measurement.
	stats    stats.Provider
	statsErr error

	listener net.Listener
	ready    chan struct{} // closed once Run has started everything

	mu       sync.Mutex
	cleanups int
	rejected map[types.UID]struct{} // pods refused at admission
	seen     map[types.UID]struct{} // pods added and not yet forgotten
	latency  map[types.UID]*startup
}

// startup is when the agent first saw a pod, and how long it took to run
// and to turn Ready.
type startup struct {
	added          time.Time
	running, ready time.Duration
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
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{opts: opts, log: log, clock: clock.RealClock{}, rt: opts.Runtime,
		ready: make(chan struct{}), rejected: map[types.UID]struct{}{}, seen: map[types.UID]struct{}{}, latency: map[types.UID]*startup{}}
	if a.rt == nil {
		a.fakeRT = NewFakeRuntime(log.With("component", "fake-runtime"))
		a.rt = a.fakeRT
	}
	a.metrics = newMetrics()
	a.pods = syncloop.NewPodSet()
	a.sink = newMemorySink(opts.Out)
	if opts.API != nil {
		if err := a.newAPI(); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.sink.inner = a.api.status
	}
	a.msgs = status.FileMessageReader{PodsDir: a.podsDir(), LogsDir: a.logsDir()}
	a.cache = pleg.NewCache()

	var err error
	if opts.EventedPLEG {
		a.pleg, err = pleg.NewEvented(pleg.EventedOptions{Runtime: a.rt, Cache: a.cache, Logger: log.With("component", "pleg"),
			Metrics: a.metrics})
	} else {
		a.pleg, err = pleg.NewGeneric(pleg.GenericOptions{Runtime: a.rt, Cache: a.cache, Logger: log.With("component", "pleg"),
			Metrics: a.metrics, RelistPeriod: opts.Timings.RelistPeriod})
	}
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.status, err = status.New(status.Options{Sink: a.sink, DeletionSafety: status.PodDeletionSafetyFunc(func(uid types.UID) bool { return a.workers.CouldHaveRunningContainers(uid) }), Pods: a.pods,
		Logger: log.With("component", "status")})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.prober, err = prober.New(prober.Options{Runner: prober.NewRunner(prober.RunnerOptions{Execer: a.rt}), Status: a.status,
		Recorder: a, Logger: log.With("component", "prober")})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if a.vol, err = a.newVolumes(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cms, secrets := a.envSources()
	var services podsync.ServiceLister
	if a.api != nil {
		services = a.api.services
	}
	a.syncer, err = podsync.New(podsync.Options{
		Runtime: a.rt, Recorder: a, Logger: log.With("component", "podsync"), Volumes: a.vol,
		ConfigMaps: cms, Secrets: secrets, Services: services,
		Probes: podsync.Probes{
			Liveness:         podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Liveness().Get(id); return ok && r == prober.Failure }),
			Startup:          podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Failure }),
			StartupSucceeded: func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Success },
		},
		LogRoot: a.logsDir(), PodsDir: a.podsDir(), NodeName: opts.NodeName, HostIPs: opts.HostIPs,
		BackoffInitial: opts.Timings.BackoffInitial, BackoffMax: opts.Timings.BackoffMax,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.workers, err = podworkers.New(podworkers.Options{
		Syncer: a,
		StatusWaiter: podworkers.StatusWaiterFunc(func(ctx context.Context, uid types.UID, t time.Time) error {
			_, err := a.cache.GetNewerThan(ctx, uid, t)
			return err
		}),
		Logger:  log.With("component", "podworkers"),
		Metrics: a.metrics,
		Machine: podworkers.MachineOptions{ResyncInterval: opts.Timings.Resync, BackOffPeriod: opts.Timings.WorkerBackOff},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if a.stats = opts.Eviction.Stats; a.stats == nil {
		a.stats, a.statsErr = a.machineStats()
	}
	if a.imageGC, err = a.newImageGC(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if !opts.Eviction.Disabled {
		if a.evict, err = a.newEviction(); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	if a.node, err = a.newNodeStatus(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.config = source.NewConfig(source.ConfigOptions{Logger: log.With("component", "config"), Recorder: a, NodeName: opts.NodeName})
	a.loop, err = syncloop.New(syncloop.Options{
		Handler:    a,
		Updates:    a.config.Updates(),
		PLEGEvents: a.pleg.Events(),
		Liveness:   a.prober.Liveness().Updates(),
		Readiness:  a.prober.Readiness().Updates(),
		Startup:    a.prober.Startup().Updates(),
		Pods:       a.pods,
		PodsToSync: a.podsPastDeadline,
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
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return a, nil
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
	if a.opts.APIUpdates != nil || a.opts.API != nil {
		s = append(s, syncloop.SourceAPI)
	}
	return s
}

func (a *Agent) podsDir() string { return filepath.Join(a.opts.RootDir, "pods") }
func (a *Agent) logsDir() string { return filepath.Join(a.opts.RootDir, "logs") }

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

// Run runs the agent until ctx ends, and returns once every goroutine it
// started has ended. Containers are left running, as a kubelet restart
// leaves them: the next agent adopts them.
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
	vctx, vcancel := context.WithTimeout(ctx, 30*time.Second)
	v, err := a.rt.Version(vctx, "v1")
	vcancel()
	if err != nil {
		return fmt.Errorf("agent: runtime version: %w", err)
	}
	a.runtime = v.GetRuntimeName()
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
	g.go_("volumes", func() error { return a.vol.Run(ctx) })
	if a.objects != nil && a.opts.ObjectPath != "" {
		g.go_("objects", func() error { return a.runObjects(ctx) })
	}
	if err := a.startSources(ctx, g); err != nil {
		cancel()
		g.wait()
		a.config.Wait()
		return err
	}
	g.go_("syncloop", func() error { return a.loop.Run(ctx) })
	if a.listener != nil {
		srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second}
		g.go_("http", func() error {
			err := srv.Serve(a.listener)
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return err
		})
		g.go_("http-shutdown", func() error {
			<-ctx.Done()
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			return srv.Shutdown(sctx)
		})
	}
	close(a.ready)
	a.log.Info("minikubelet started", "node", a.opts.NodeName, "rootDir", a.opts.RootDir, "sources", a.sources())
	err = g.wait()
	cancel()
	a.config.Wait()
	return err
}

func (a *Agent) startSources(ctx context.Context, g *group) error {
	if a.opts.ManifestPath != "" {
		f, err := source.NewFile(source.FileOptions{Path: a.opts.ManifestPath, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
			AllowAPIReferences: a.opts.ObjectPath != "",
			Logger:             a.log.With("component", "file-source"), Recorder: a, Out: a.config.Channel(ctx, syncloop.SourceFile)})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		g.go_("file-source", func() error { return f.Run(ctx) })
	}
	if a.opts.ManifestURL != "" {
		u, err := source.NewURL(source.URLOptions{URL: a.opts.ManifestURL, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
			AllowAPIReferences: a.opts.ObjectPath != "",
			Logger:             a.log.With("component", "http-source"), Out: a.config.Channel(ctx, syncloop.SourceHTTP)})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		g.go_("http-source", func() error { return u.Run(ctx) })
	}
	if a.api != nil {
		if err := a.startAPI(ctx, g); err != nil {
			return err
		}
	}
	if a.opts.APIUpdates != nil {
		out := a.config.Channel(ctx, syncloop.SourceAPI)
		g.go_("api-source", func() error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case u, ok := <-a.opts.APIUpdates:
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
