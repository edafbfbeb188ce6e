package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"

	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// A runnable is one part of the agent that Run starts. Run takes them in
// the order New listed them, each in three optional steps: it keeps stop
// for the end, calls start and, once start has returned, runs run on a
// goroutine of its own.
type runnable struct {
	// name says which part a run's error came from.
	name string
	// start prepares the part on Run's goroutine (a directory made, a
	// listener opened, a checkpoint read, a source built), so that it is
	// done before any part listed later starts. Its error, which says what
	// failed, ends Run.
	start func(ctx context.Context) error
	// run runs the part until ctx ends; an error ends Run, returned after
	// the part's name, and stops every other part.
	run func(ctx context.Context) error
	// stop releases what the part holds once every goroutine has ended,
	// the last part's first.
	stop func()
}

// newRunnables lists what Run starts, in the order it starts them; a part
// the options leave out is not listed. The order is what the parts rely
// on: listeners open first, so that a taken port fails Run before anything
// runs; the runtime's name is known before any pod status is built; the
// device checkpoint is read before any pod is admitted, so that running
// pods keep their devices; the cgroup hierarchy exists before any pod
// cgroup; one relist fills the PLEG's cache before the sync loop starts;
// the sources have registered with source.Config before the sync loop
// waits for them; the host's resolv.conf is checked just before the sync
// loop starts, as upstream's; the servers (the pod-resources socket among
// them) and the shutdown trigger start last.
func (a *Agent) newRunnables(b *blocks) []runnable {
	rs := []runnable{{name: "directories", start: func(context.Context) error {
		for _, d := range []string{a.opts.podsDir(), a.opts.logsDir()} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
		}
		return nil
	}}}
	if a.opts.HTTP.Listen != "" {
		rs = append(rs, runnable{name: "http-listener", start: func(context.Context) error {
			l, err := net.Listen("tcp", a.opts.HTTP.Listen)
			if err != nil {
				return fmt.Errorf("agent: listen: %w", err)
			}
			a.listener = l
			return nil
		}})
	}
	// The kubelet API's server is built once its listener is open, and
	// serves once everything else has started.
	apiListens := a.opts.HTTP.API != nil && a.opts.HTTP.API.Listen != ""
	var apiServer *server.Server
	if apiListens {
		rs = append(rs, runnable{name: "kubelet-api-listener", start: func(context.Context) error {
			if err := a.listenAPI(); err != nil {
				return err
			}
			var err error
			apiServer, err = a.newAPIServer()
			return err
		}})
	}
	rs = append(rs, runnable{name: "runtime-version", start: func(ctx context.Context) error {
		v, err := a.rt.Version(ctx, "v1")
		if err != nil {
			return fmt.Errorf("agent: runtime version: %w", err)
		}
		b.syncer.runtimeName = v.GetRuntimeName()
		return nil
	}})
	if r := b.pullRecords; r != nil {
		// Before any pod syncs: the records are read, and the pulls a
		// restart interrupted turned into records of the images the
		// runtime has.
		rs = append(rs, runnable{name: "pulled-image-records", start: func(ctx context.Context) error {
			if err := r.Open(ctx, a.rt); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			return nil
		}})
	}
	if b.devices != nil {
		rs = append(rs, runnable{name: "device-checkpoint", start: func(context.Context) error {
			if err := b.devices.Listen(); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			return nil
		}})
	}
	if cg := b.cgroups; cg.mgr != nil {
		// Closed even when the hierarchy cannot be made: the systemd
		// driver's D-Bus connection.
		rs = append(rs, runnable{name: "cgroups", start: cg.start, stop: func() { cg.mgr.Close() }})
	}
	// One relist before anything starts: the sync loop, which pauses while
	// the PLEG has not relisted, then starts on a known runtime state
	// rather than racing the PLEG's first relist.
	rs = append(rs, runnable{name: "first-relist", start: func(ctx context.Context) error {
		if err := a.pleg.Relist(ctx); err != nil {
			a.log.Warn("First relist failed", "err", err)
		}
		return nil
	}})
	if a.fakeRT != nil {
		rs = append(rs, runnable{name: "fake-runtime", stop: a.fakeRT.Close})
	}
	rs = append(rs,
		// Before the PLEG, whose events it serves; what the first relist
		// queued waits in its buffer.
		runnable{name: "container-deletor", run: b.handler.deletor.Run},
		runnable{name: "pleg", run: a.pleg.Run},
		runnable{name: "podworkers", run: b.view.workers.Run},
		runnable{name: "status", run: b.view.status.Run},
		runnable{name: "prober", run: b.prober.Run})
	if b.stats != nil {
		rs = append(rs, runnable{name: "image-gc", run: b.imageGC.Run})
	}
	if b.evict != nil {
		rs = append(rs, runnable{name: "eviction", run: b.evict.Run})
	}
	rs = append(rs,
		runnable{name: "node-status", run: a.node.Run},
		runnable{name: "container-logs", run: b.rotator.Run},
		runnable{name: "volumes", run: b.vol.Run})
	if a.opts.Cluster.ResourceSlices != nil {
		// The node's ResourceSlices deleted once, in the background, as
		// upstream's kubelet does at start (no DRA driver has registered
		// yet); a failure is logged and retried by the DRA registry.
		rs = append(rs, runnable{name: "dra-resourceslices", run: func(ctx context.Context) error {
			_ = b.dra.Registry().WipeAll(ctx)
			return nil
		}})
	}
	rs = append(rs,
		// The DRA plugins' connections are closed, and the pending wipes
		// of their drivers' ResourceSlices cancelled, as Run returns.
		runnable{name: "plugins", run: b.plugins.Run, stop: b.dra.Registry().Close})
	if b.devices != nil {
		rs = append(rs, runnable{name: "devices", run: b.devices.Run})
	}
	if r := b.res.reconciler(b, a.opts.Resources.CPUManagerReconcilePeriod); r != nil {
		rs = append(rs, runnable{name: "resource-managers", run: r.run})
	}
	if b.objects != nil && a.opts.Sources.ObjectPath != "" {
		// Read once before the pod sources start: a static pod's first
		// sync then finds the objects its volumes and environment name.
		var l *objectLoader
		rs = append(rs, runnable{name: "objects",
			start: func(context.Context) error { l = b.loadObjects(); return nil },
			run:   func(ctx context.Context) error { return l.run(ctx) }})
	}
	rs = append(rs, a.sourceRunnables(b)...)
	if apiListens && a.fakeRT != nil {
		rs = append(rs, a.fakeStreaming())
	}
	if a.opts.Node.resolvConf() != "" {
		rs = append(rs, runnable{name: "resolv-conf", start: func(context.Context) error { b.checkResolvConf(); return nil }})
	}
	rs = append(rs, runnable{name: "syncloop", run: a.loop.Run})
	if a.opts.HTTP.Listen != "" {
		var srv *server.Server
		rs = append(rs, runnable{name: "http",
			start: func(context.Context) error {
				srv = server.New(server.Options{Pods: a, Node: a, Checks: a.healthChecks(), Stats: a.api, Metrics: a.opts.HTTP.MetricsHandler,
					ResourceMetrics: a.opts.HTTP.ResourceMetricsHandler, ProbeMetrics: a.opts.HTTP.ProbeMetricsHandler,
					CadvisorMetrics: a.opts.HTTP.CadvisorMetricsHandler, Logger: a.log.With("component", "http")})
				return nil
			},
			run: func(ctx context.Context) error { return srv.Serve(ctx, a.listener) }})
	}
	if apiListens {
		rs = append(rs, runnable{name: "kubelet-api", run: func(ctx context.Context) error { return apiServer.Serve(ctx, a.apiListener) }})
	}
	if a.opts.HTTP.PodResources {
		// Listening as it starts: the socket is there once Ready is closed.
		pr := a.podResources
		rs = append(rs, runnable{name: "pod-resources",
			start: func(context.Context) error {
				if err := pr.Listen(); err != nil {
					return fmt.Errorf("agent: %w", err)
				}
				return nil
			},
			run: pr.Run})
	}
	if a.healthz != nil {
		// After the rest, as upstream starts it once the kubelet runs. It
		// opens its own listener, and retries a port in use instead of
		// failing Run.
		rs = append(rs, runnable{name: "healthz", run: a.healthz.Run})
	}
	if t := a.opts.Shutdown.Trigger; t != nil {
		rs = append(rs, runnable{name: "shutdown-trigger", run: func(ctx context.Context) error { return t.Run(ctx, a.shutdown) }})
	}
	if a.watchdog.Interval() > 0 {
		// Last, as upstream starts it once the kubelet runs: a check that
		// fails meanwhile only skips a tick.
		rs = append(rs, runnable{name: "watchdog", run: a.watchdog.Run})
	}
	return rs
}

// sourceRunnables are the pod sources: each registers its channel with
// source.Config as it starts, before the sync loop waits for every source.
func (a *Agent) sourceRunnables(b *blocks) []runnable {
	var rs []runnable
	if a.opts.Sources.ManifestPath != "" {
		var f *source.File
		rs = append(rs, runnable{name: "file-source",
			start: func(ctx context.Context) (err error) {
				f, err = source.NewFile(source.FileOptions{Path: a.opts.Sources.ManifestPath, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
					AllowAPIReferences: a.opts.Sources.ObjectPath != "", Clock: a.clock, DisableWatch: a.opts.Sources.PollManifests,
					Logger: a.log.With("component", "file-source"), Recorder: b.events, Out: b.config.Channel(ctx, syncloop.SourceFile)})
				if err != nil {
					return fmt.Errorf("agent: %w", err)
				}
				return nil
			},
			run: func(ctx context.Context) error { return f.Run(ctx) }})
	}
	if a.opts.Sources.ManifestURL != "" {
		var u *source.URL
		rs = append(rs, runnable{name: "http-source",
			start: func(ctx context.Context) (err error) {
				u, err = source.NewURL(source.URLOptions{URL: a.opts.Sources.ManifestURL, NodeName: a.opts.NodeName, Period: a.opts.Timings.SourcePeriod,
					AllowAPIReferences: a.opts.Sources.ObjectPath != "", Clock: a.clock,
					Logger: a.log.With("component", "http-source"), Recorder: b.events, Out: b.config.Channel(ctx, syncloop.SourceHTTP)})
				if err != nil {
					return fmt.Errorf("agent: %w", err)
				}
				return nil
			},
			run: func(ctx context.Context) error { return u.Run(ctx) }})
	}
	if updates := a.opts.Cluster.Updates; updates != nil {
		rs = append(rs, forwardSource(b, "api-source", syncloop.SourceAPI, updates, nil))
	}
	for _, c := range a.opts.Sources.Custom {
		cs := newCustomSource(c.Name, b.events, a.log.With("component", "source", "source", c.Name))
		rs = append(rs, forwardSource(b, c.Name+"-source", c.Name, c.Updates, cs.prepare))
	}
	return rs
}

// forwardSource is a source of the user's: the messages of updates,
// prepared (when prepare is not nil), go to the merge as source's until
// updates is closed or the agent stops.
func forwardSource(b *blocks, name, source string, updates <-chan syncloop.PodUpdate, prepare func(syncloop.PodUpdate) syncloop.PodUpdate) runnable {
	var out chan<- syncloop.PodUpdate
	return runnable{name: name,
		start: func(ctx context.Context) error { out = b.config.Channel(ctx, source); return nil },
		run: func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case u, ok := <-updates:
					if !ok {
						return nil
					}
					if prepare != nil {
						u = prepare(u)
					}
					select {
					case out <- u:
					case <-ctx.Done():
						return nil
					}
				}
			}
		}}
}

// Run runs the agent until ctx ends, and returns once every goroutine it
// started has ended. Containers are left running, as a kubelet restart
// leaves them: the next agent adopts them. Run may be called once.
//
// It starts the parts New listed (newRunnables) in order, closes Ready once
// all have started, and when one fails to start stops those already
// running and closes the listeners before it returns the error.
func (a *Agent) Run(ctx context.Context) error {
	if a.ownRoot {
		defer a.removeRoot()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &group{cancel: cancel}
	var stops []func()
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	for _, r := range a.runnables {
		if r.stop != nil {
			stops = append(stops, r.stop)
		}
		if r.start != nil {
			if err := r.start(ctx); err != nil {
				cancel()
				g.wait()
				a.config.Wait()
				a.closeListeners()
				return err
			}
		}
		if r.run != nil {
			g.go_(r.name, func() error { return r.run(ctx) })
		}
	}
	close(a.ready)
	a.log.Info("Agent started", "node", a.opts.NodeName, "rootDir", a.opts.RootDir, "sources", a.opts.sources())
	err := g.wait()
	cancel()
	a.config.Wait()
	return err
}

// removeRoot removes the root directory New chose for an agent on the
// embedded fake runtime (Options.RootDir empty), once everything Run
// started has stopped: its pods ended with the runtime. Nothing is mounted
// under it (New set Security.NoMounts).
func (a *Agent) removeRoot() {
	if err := os.RemoveAll(a.opts.RootDir); err != nil {
		a.log.Error("Failed to remove the root directory", "rootDir", a.opts.RootDir, "err", err)
	}
}

// closeListeners closes the listeners Run opened, when it cannot go on.
func (a *Agent) closeListeners() {
	for _, l := range []net.Listener{a.listener, a.apiListener} {
		if l != nil {
			l.Close()
		}
	}
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
