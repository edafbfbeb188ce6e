package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/pluginmanager"
	"github.com/kubeletkit/kubeletkit/podresources"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/server"
	nodestats "github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

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
	ownRoot := false
	if opts.RootDir == "" {
		if opts.Runtime != nil {
			return nil, fmt.Errorf("agent: RootDir is empty: a node on its own Runtime needs a root directory that outlives the process, as its containers do (upstream's is /var/lib/kubelet): %w", ErrInvalidOptions)
		}
		dir, err := freshRootDir(opts.NodeName)
		if err != nil {
			return nil, fmt.Errorf("agent: RootDir: %w", err)
		}
		opts.RootDir, opts.Security.NoMounts, ownRoot = dir, true, true
	}
	if !filepath.IsAbs(opts.RootDir) {
		abs, err := filepath.Abs(opts.RootDir)
		if err != nil {
			return nil, fmt.Errorf("agent: root dir %q: %w", opts.RootDir, err)
		}
		opts.RootDir = abs
	}
	if len(opts.Node.HostIPs) == 0 {
		opts.Node.HostIPs = []string{hostIP()}
	}
	if opts.Cluster.LeaseDuration < 0 || opts.Cluster.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("agent: Cluster.LeaseDuration %s is not a positive number of seconds: %w", opts.Cluster.LeaseDuration, ErrInvalidOptions)
	}
	if p := opts.Node.MaxContainerRestartPeriod; p != 0 && (p < time.Second || p > 300*time.Second) {
		return nil, fmt.Errorf("agent: Node.MaxContainerRestartPeriod %s must be between 1s and 300s, as upstream's crashLoopBackOff.maxContainerRestartPeriod: %w",
			p, ErrInvalidOptions)
	}
	if slices.Contains(opts.Node.DeclaredFeatures, ExtendWebSocketsToKubelet) && (opts.HTTP.API == nil || opts.HTTP.API.WebSockets == nil) {
		return nil, fmt.Errorf("agent: the node declares %s (Node.DeclaredFeatures), and its kubelet API has no WebSockets to serve them (HTTP.API.WebSockets): %w",
			ExtendWebSocketsToKubelet, ErrInvalidOptions)
	}
	if err := opts.Sources.checkCustom(); err != nil {
		return nil, err
	}
	if err := opts.Node.checkDNS(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Node.MaxPods < 0 {
		return nil, fmt.Errorf("agent: Node.MaxPods %d must not be a negative number: %w", opts.Node.MaxPods, ErrInvalidOptions)
	}
	if opts.Node.Machine == nil {
		opts.Node.Machine = node.LocalMachine{StorageDir: opts.RootDir}
	}
	opts.Node.Machine = node.WithMaxPods(opts.Node.Machine, opts.Node.MaxPods)
	for _, r := range []struct {
		field string
		l     v1.ResourceList
	}{{"Node.KubeReserved", opts.Node.KubeReserved}, {"Node.SystemReserved", opts.Node.SystemReserved}} {
		for name, q := range r.l {
			if q.Sign() < 0 {
				return nil, fmt.Errorf("agent: %s %s %s is negative: %w", r.field, name, q.String(), ErrInvalidOptions)
			}
		}
	}
	if err := opts.Cgroups.check(); err != nil {
		return nil, err
	}
	if !opts.Security.NoMounts && os.Geteuid() != 0 {
		opts.Security.NoMounts = true
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var healthz *server.Healthz
	if h := opts.HTTP.Healthz; h != nil {
		var err error
		if healthz, err = server.NewHealthz(server.HealthzOptions{Addr: h.Listen, Clock: opts.Clock, Logger: log.With("component", "healthz")}); err != nil {
			return nil, fmt.Errorf("agent: HTTP.Healthz: %w: %w", err, ErrInvalidOptions)
		}
	}
	b, err := build(opts, log)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{opts: opts, log: log, clock: opts.Clock, rt: b.rt, fakeRT: b.fakeRT, view: b.view, healthz: healthz,
		node: b.node, shutdown: b.shutdown, api: b.api, podResources: b.podResources, pleg: b.pleg, loop: b.loop, config: b.config,
		ready: make(chan struct{}), ownRoot: ownRoot, started: opts.Clock.Now()}
	if b.cgroups != nil && b.cgroups.mgr != nil {
		a.cgroupMgr = b.cgroups.mgr
		if a.cgroupStats, err = nodestats.NewCgroupReader(nodestats.CgroupReaderOptions{Pods: a.cgroupMgr, CgroupRoot: opts.Cgroups.FS,
			Clock: opts.Clock, Logger: log.With("component", "cgroup-stats")}); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	if a.watchdog, err = watchdog.New(watchdog.Options{Timeout: opts.Watchdog.Timeout, Notifier: opts.Watchdog.Notifier,
		Checks: a.watchdogChecks(), Clock: opts.Clock, Logger: log.With("component", "watchdog")}); err != nil {
		return nil, fmt.Errorf("agent: Watchdog: %w: %w", err, ErrInvalidOptions)
	}
	a.runnables = a.newRunnables(b)
	return a, nil
}

// blocks are the parts New builds, each on the agent's clock and logger,
// before it gives each role (the handler, the syncer, the node API) the
// ones that role uses and lists what Run starts (newRunnables). Nothing
// keeps it once New returns but those runnables.
type blocks struct {
	opts     Options
	log      *slog.Logger
	clock    Clock
	rt       Runtime
	caps     FullRuntime   // rt, its missing capabilities answering ErrUnimplemented
	fakeRT   *fake.Runtime // nil when Options.Runtime is set
	metrics  Metrics
	events   *recorder
	view     *podView
	nodeView *nodeView
	features runtimeFeatures
	sysctls  *admission.Sysctls
	appArmor bool // the host enforces AppArmor (admission.AppArmor)
	// allocatable: the node's allocatable at the start, the downward
	// API's default limits.
	allocatable v1.ResourceList

	config       *source.Config
	sourcesReady func() bool // every configured source has sent its pods
	sink         *memorySink
	cache        *pleg.Cache
	pleg         lifecycle
	alloc        *allocation.Manager
	prober       *prober.Manager
	vol          *volume.Manager
	csi          *volume.CSIRegistry    // the CSI drivers registered through the plugin registry
	plugins      *pluginmanager.Manager // the plugin registry
	objects      *volume.StaticSources  // configMaps and secrets from Sources.ObjectPath
	devices      *devices.Manager       // nil without Node.DevicePluginDir
	res          resourceManagers       // the CPU, memory and topology managers; nil parts with every policy none
	cgroups      *podCgroups            // its manager is nil without Cgroups.PerQOS
	podsync      *podsync.Syncer
	dra          *dra.Manager         // its Registry is the DRAPlugin handler
	pullRecords  *pullrecords.Manager // nil with Node.PulledImages.Off
	stats        stats.Provider       // nil, with statsErr saying why, without a measurement
	statsErr     error
	imageGC      *imagegc.Manager
	evict        *eviction.Manager // nil when disabled
	shutdown     *nodeshutdown.Manager
	api          *nodeAPI
	podResources *podresources.Server
	rotator      *logs.Rotator
	node         *node.Controller
	handler      *handler
	syncer       *podSyncer
	loop         *syncloop.Loop
}

// build makes the blocks and the roles over them.
func build(opts Options, log *slog.Logger) (*blocks, error) {
	sysctls, err := admission.NewSysctls(opts.Security.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("Security.AllowedUnsafeSysctls: %w: %w", err, ErrInvalidOptions)
	}
	b := &blocks{opts: opts, log: log, clock: opts.Clock, rt: opts.Runtime, metrics: opts.Metrics, sysctls: sysctls,
		appArmor: admission.HostAppArmorEnabled()}
	if b.metrics == nil {
		b.metrics = noMetrics{}
	}
	b.events = &recorder{metrics: b.metrics, next: opts.Cluster.Recorder, log: log}
	if b.rt == nil {
		b.fakeRT = NewFakeRuntime(opts.Clock, log.With("component", "fake-runtime"))
		if opts.Cgroups.Driver == string(cgroups.DriverSystemd) {
			// Set up as the node is: it reports the configured driver
			// when Run asks for it.
			b.fakeRT.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD)
		}
		b.rt = b.fakeRT
	}
	b.caps = withCapabilities(b.rt)
	b.features = runtimeFeatures{rt: b.caps, log: log}
	b.view = &podView{pods: syncloop.NewPodSet(), records: newPodRecords(opts.Clock, b.metrics)}
	view := b.view
	b.config = source.NewConfig(source.ConfigOptions{Logger: log.With("component", "config"), Recorder: b.events, NodeName: opts.NodeName, Clock: b.clock})
	config, sources := b.config, opts.sources()
	b.sourcesReady = func() bool { return config.SeenAllSources(sources...) }
	b.sink = newMemorySink(opts.Out, opts.Cluster.StatusSink, opts.Cluster.MirrorPods == nil)
	b.cache = pleg.NewCache()
	if b.res, err = newResourceManagers(opts, log); err != nil {
		return nil, err
	}
	if b.devices, err = newDevices(opts, b.res, log); err != nil {
		return nil, err
	}
	// With a topology manager the devices are its first hint provider and
	// are allocated in its Allocate phase, with the merged affinity.
	b.res.addHintProviders(b.devices)
	b.nodeView = &nodeView{opts: opts, devices: b.devices, log: log}
	if b.alloc, err = newAllocation(opts, b.nodeView, view, b.events, log); err != nil {
		return nil, err
	}
	// The handler first, empty: the PLEG hands it its events.
	h := &handler{podView: view, alloc: b.alloc, devices: b.devices, rt: b.rt, mirrors: opts.Cluster.MirrorPods,
		declared: declaredFeatures(opts), rootDir: opts.RootDir, events: b.events, clock: b.clock, log: log}
	b.handler = h
	_, evented := b.rt.(cri.EventSource)
	if opts.EventedPLEG && !evented {
		log.Info("The container runtime has no container events (cri.EventSource): the PLEG relists instead of following them")
	}
	if opts.EventedPLEG && evented {
		b.pleg, err = pleg.NewEvented(pleg.EventedOptions{Runtime: b.caps, Cache: b.cache, Clock: b.clock,
			Logger: log.With("component", "pleg"), Metrics: b.metrics, OnEvents: h.handlePLEGEvents})
	} else {
		b.pleg, err = pleg.NewGeneric(pleg.GenericOptions{Runtime: b.rt, Cache: b.cache, Clock: b.clock,
			Logger: log.With("component", "pleg"), Metrics: b.metrics, RelistPeriod: opts.Timings.RelistPeriod,
			OnEvents: h.handlePLEGEvents})
	}
	if err != nil {
		return nil, err
	}
	if view.status, err = status.New(status.Options{Sink: b.sink, Clock: b.clock,
		DeletionSafety: status.PodDeletionSafetyFunc(func(uid types.UID) bool { return view.workers.CouldHaveRunningContainers(uid) }),
		Pods:           view.pods, Logger: log.With("component", "status")}); err != nil {
		return nil, err
	}
	rnd := opts.Rand
	if b.prober, err = prober.New(prober.Options{Runner: countingProber(b.metrics, b.clock, prober.NewRunner(prober.RunnerOptions{Execer: execer(b.rt)})), Status: view.status,
		Clock: b.clock, Jitter: func(p time.Duration) time.Duration { return time.Duration(rnd() * float64(p)) },
		Recorder: b.events, Logger: log.With("component", "prober")}); err != nil {
		return nil, err
	}
	// Read once: the downward API's default limits, the memory of
	// oom_score_adj and the huge page sizes of container configs.
	capacity, capErr := opts.Node.Machine.Capacity(context.Background())
	if capErr != nil {
		log.Warn("Cannot read the node's capacity: a container's unset limits read through the downward API fail", "err", capErr)
	} else {
		b.allocatable = node.Allocatable(capacity, b.nodeView.reservation(capacity))
	}
	b.csi = volume.NewCSIRegistry(opts.Cluster.CSINodes)
	if b.vol, err = b.newVolumes(); err != nil {
		return nil, err
	}
	if vm, ok := b.metrics.(VolumeMetrics); ok {
		vm.CountVolumes(b.vol.VolumeCounts)
	}
	mgr, err := newCgroups(opts, b.caps, capacity, b.res.cpu, log)
	if err != nil {
		return nil, err
	}
	b.cgroups = &podCgroups{mgr: mgr, opts: opts.Cgroups, node: opts.Node, classes: opts.Cluster.RuntimeClasses, rootDir: opts.RootDir,
		view: view, cache: b.cache, events: b.events, log: log}
	if b.pullRecords, err = b.newPullRecords(); err != nil {
		return nil, err
	}
	if b.podsync, err = b.newPodSync(capacity); err != nil {
		return nil, err
	}
	if b.plugins, err = b.newPlugins(); err != nil {
		return nil, err
	}
	b.cgroups.killer = b.podsync
	b.syncer = &podSyncer{podView: view, rt: b.rt, cache: b.cache, pleg: b.pleg, podsync: b.podsync, alloc: b.alloc, prober: b.prober,
		vol: b.vol, cgroups: b.cgroups, devices: b.devices, dra: b.dra, msgs: status.FileMessageReader{PodsDir: opts.podsDir(), LogsDir: opts.logsDir()},
		metrics: b.metrics, events: b.events, clock: b.clock, log: log, rootDir: opts.RootDir}
	if opts.Cluster.ReportHostIPs {
		b.syncer.hostIPs = opts.Node.HostIPs
	}
	if view.workers, err = podworkers.New(podworkers.Options{
		Syncer:       b.syncer,
		Clock:        b.clock,
		StatusWaiter: podworkers.StatusWaiterFunc(b.syncer.waitFresh),
		Logger:       log.With("component", "podworkers"),
		Metrics:      b.metrics,
		// The final status a terminating pod's sync wrote had its terminal
		// phase held back while the workers still counted its containers;
		// it is written as soon as they stop counting them.
		Terminated: view.status.PushAgain,
		// Starting pods sync 16 at a time, oldest first.
		StartGate: podworkers.NewStartGate(podworkers.DefaultStartSlots),
		Starting:  view.records.starting,
		Machine:   podworkers.MachineOptions{ResyncInterval: opts.Timings.Resync, BackOffPeriod: opts.Timings.WorkerBackOff, Rand: opts.Rand},
	}); err != nil {
		return nil, err
	}
	if b.stats = opts.Eviction.Stats; b.stats == nil {
		b.stats, b.statsErr = b.machineStats()
	}
	if b.imageGC, err = b.newImageGC(); err != nil {
		return nil, err
	}
	if !opts.Eviction.Disabled {
		if b.evict, err = b.newEviction(); err != nil {
			return nil, err
		}
	}
	if b.shutdown, err = b.newShutdown(); err != nil {
		return nil, err
	}
	if h.admission, err = newAdmission(b, h.preempt); err != nil {
		return nil, err
	}
	b.api = &nodeAPI{rt: b.caps, pods: view.pods, status: view.status, clock: b.clock, checkpoints: filepath.Join(b.opts.RootDir, "checkpoints")}
	b.newSummary()
	if b.podResources, err = b.newPodResources(); err != nil {
		return nil, err
	}
	if b.rotator, err = logs.NewRotator(logs.RotatorOptions{Runtime: b.rt, Clock: b.clock, MaxSize: opts.Logs.MaxSize,
		MaxFiles: opts.Logs.MaxFiles, Logger: log.With("component", "container-logs")}); err != nil {
		return nil, err
	}
	if b.node, err = b.newNodeStatus(); err != nil {
		return nil, err
	}
	b.nodeView.status = b.node
	h.prober, h.cgroups, h.gc, h.dra = b.prober, b.cgroups, b.podsync, b.dra
	h.cache = b.cache
	if h.deletor, err = podsync.NewDeletor(podsync.DeletorOptions{Remover: b.podsync,
		Logger: log.With("component", "container-deletor")}); err != nil {
		return nil, err
	}
	// What each part keeps of a pod, forgotten at housekeeping once the pod
	// is finished and no longer desired.
	h.forgetters = []podForgetter{b.alloc, forgetFunc(view.status.Remove), b.podsync,
		forgetFunc(b.sink.forget), b.vol, forgetProbeMetrics(b.metrics), b.res}
	pl := b.pleg
	b.loop, err = syncloop.New(syncloop.Options{
		Handler:   h,
		Clock:     b.clock,
		Updates:   b.config.Updates(),
		Liveness:  b.prober.Liveness().Updates(),
		Readiness: b.prober.Readiness().Updates(),
		Startup:   b.prober.Startup().Updates(),
		// Readiness reaches the status of a pod whose worker is busy
		// terminating it.
		ProbeStatus: view.status,
		Pods:        view.pods,
		PodsToSync:  h.podsToSync,
		RuntimeHealthy: func() error {
			if ok, err := pl.Healthy(); !ok {
				return err
			}
			return nil
		},
		SourcesReady:       b.sourcesReady,
		HousekeepingPeriod: opts.Timings.Housekeeping,
		Logger:             log.With("component", "syncloop"),
	})
	return b, err
}

// sources are the names of the configured pod sources.
func (o Options) sources() []string {
	var s []string
	if o.Sources.ManifestPath != "" {
		s = append(s, syncloop.SourceFile)
	}
	if o.Sources.ManifestURL != "" {
		s = append(s, syncloop.SourceHTTP)
	}
	if o.Cluster.Updates != nil {
		s = append(s, syncloop.SourceAPI)
	}
	for _, c := range o.Sources.Custom {
		s = append(s, c.Name)
	}
	return s
}

// checkCustom refuses custom sources without a channel, or whose names are
// empty, repeated or the agent's own.
func (o SourceOptions) checkCustom() error {
	seen := map[string]int{}
	for i, c := range o.Custom {
		field := fmt.Sprintf("Sources.Custom[%d]", i)
		switch c.Name {
		case "":
			return fmt.Errorf("agent: %s.Name is empty: %w", field, ErrInvalidOptions)
		case syncloop.SourceFile, syncloop.SourceHTTP, syncloop.SourceAPI, syncloop.SourceAll:
			return fmt.Errorf("agent: %s.Name %q is reserved (the agent's own sources are %q, %q and %q; %q stands for all): %w",
				field, c.Name, syncloop.SourceFile, syncloop.SourceHTTP, syncloop.SourceAPI, syncloop.SourceAll, ErrInvalidOptions)
		}
		if j, dup := seen[c.Name]; dup {
			return fmt.Errorf("agent: %s.Name %q is also Sources.Custom[%d]'s: %w", field, c.Name, j, ErrInvalidOptions)
		}
		seen[c.Name] = i
		if c.Updates == nil {
			return fmt.Errorf("agent: %s (%q).Updates is nil: %w", field, c.Name, ErrInvalidOptions)
		}
	}
	return nil
}

// podsDir is RootDir/pods, the pods' data directories.
func (o Options) podsDir() string { return filepath.Join(o.RootDir, "pods") }

// logsDir is where the containers' logs are kept: Logs.Dir, else
// RootDir/logs.
func (o Options) logsDir() string {
	if o.Logs.Dir != "" {
		return o.Logs.Dir
	}
	return filepath.Join(o.RootDir, "logs")
}
