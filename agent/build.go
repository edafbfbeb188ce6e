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
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
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
	if len(opts.Node.HostIPs) == 0 {
		opts.Node.HostIPs = []string{hostIP()}
	}
	if opts.Cluster.LeaseDuration < 0 || opts.Cluster.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("agent: Cluster.LeaseDuration %s is not a positive number of seconds: %w", opts.Cluster.LeaseDuration, ErrInvalidOptions)
	}
	if slices.Contains(opts.Node.DeclaredFeatures, ExtendWebSocketsToKubelet) && (opts.HTTP.API == nil || opts.HTTP.API.WebSockets == nil) {
		return nil, fmt.Errorf("agent: the node declares %s (Node.DeclaredFeatures), and its kubelet API has no WebSockets to serve them (HTTP.API.WebSockets): %w",
			ExtendWebSocketsToKubelet, ErrInvalidOptions)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Node.Machine == nil {
		opts.Node.Machine = node.LocalMachine{StorageDir: opts.RootDir}
	}
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
	sysctls, err := admission.NewSysctls(opts.Security.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("agent: Security.AllowedUnsafeSysctls: %w: %w", err, ErrInvalidOptions)
	}
	a := &Agent{opts: opts, log: log, clock: opts.Clock, rt: opts.Runtime, metrics: opts.Metrics, sysctls: sysctls,
		ready: make(chan struct{}), rejected: map[types.UID]struct{}{}, seen: map[types.UID]struct{}{}, latency: map[types.UID]*startup{},
		appArmor: admission.HostAppArmorEnabled()}
	if a.metrics == nil {
		a.metrics = noMetrics{}
	}
	a.events = &recorder{metrics: a.metrics, next: opts.Cluster.Recorder, log: log}
	if a.rt == nil {
		a.fakeRT = NewFakeRuntime(opts.Clock, log.With("component", "fake-runtime"))
		a.rt = a.fakeRT
	}
	a.pods = syncloop.NewPodSet()
	a.sink = newMemorySink(opts.Out, opts.Cluster.StatusSink)
	a.msgs = status.FileMessageReader{PodsDir: a.podsDir(), LogsDir: a.logsDir()}
	a.cache = pleg.NewCache()
	if err := a.build(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.runnables = a.newRunnables()
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
	if capacity, err := a.opts.Node.Machine.Capacity(context.Background()); err != nil {
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
			Volumes: a.vol, ConfigMaps: cms, Secrets: secrets, Services: opts.Cluster.Services, NodeAllocatable: a.allocatable,
			RecursiveReadOnlyMounts: a.handlerSupportsRecursiveReadOnly,
			Devices:                 a.containerDevices(),
			UserNamespaces:          a.handlerSupportsUserNamespaces,
			SeccompDefault:          opts.Security.SeccompDefault, SeccompProfileRoot: filepath.Join(opts.RootDir, "seccomp"),
			Cgroups: sandboxCgroups, RuntimeClasses: opts.Cluster.RuntimeClasses,
			MemorySwapController: a.fakeRT == nil && memorySwapController(), MemoryCapacity: memoryCapacity,
			LogRoot: a.logsDir(), PodsDir: a.podsDir(), NodeName: opts.NodeName, HostIPs: opts.Node.HostIPs,
		},
		PodCgroups: podCgroups,
		Probes: podsync.Probes{
			Liveness:         podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Liveness().Get(id); return ok && r == prober.Failure }),
			Startup:          podsync.ProbeResultsFunc(func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Failure }),
			StartupSucceeded: func(id string) bool { r, ok := a.prober.Startup().Get(id); return ok && r == prober.Success },
		},
		ContainerLogLinksDir: opts.Logs.LinksDir,
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
	if a.rotator, err = logs.NewRotator(logs.RotatorOptions{Runtime: a.rt, Clock: a.clock, MaxSize: opts.Logs.MaxSize,
		MaxFiles: opts.Logs.MaxFiles, Logger: log.With("component", "container-logs")}); err != nil {
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
	if a.opts.Sources.ManifestPath != "" {
		s = append(s, syncloop.SourceFile)
	}
	if a.opts.Sources.ManifestURL != "" {
		s = append(s, syncloop.SourceHTTP)
	}
	if a.opts.Cluster.Updates != nil {
		s = append(s, syncloop.SourceAPI)
	}
	return s
}

func (a *Agent) podsDir() string { return filepath.Join(a.opts.RootDir, "pods") }
func (a *Agent) logsDir() string {
	if a.opts.Logs.Dir != "" {
		return a.opts.Logs.Dir
	}
	return filepath.Join(a.opts.RootDir, "logs")
}
