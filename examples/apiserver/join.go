package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// JoinOptions configure Join. Every zero value is upstream kubelet's
// default.
type JoinOptions struct {
	// NodeLabels are added to the Node when it is registered (upstream's
	// --node-labels). They need registration: with SkipNodeRegistration
	// they are refused.
	NodeLabels map[string]string
	// NodeTaints are the Node's taints when it is registered (upstream's
	// registerWithTaints), and ProviderID its spec.providerID (upstream's
	// providerID). Like NodeLabels, they need registration.
	NodeTaints []v1.Taint
	ProviderID string
	// SkipNodeRegistration leaves the Node to someone else (upstream's
	// --register-node=false): the agent only updates the status of a Node
	// that exists, and renews its lease.
	SkipNodeRegistration bool
	// NodeLeaseDuration is the node lease's duration, a whole number of
	// seconds; it is renewed every quarter of it. 0 means upstream's 40s
	// (nodeLeaseDurationSeconds).
	NodeLeaseDuration time.Duration
	// Logger receives the adapters' logs, each with a "component"
	// attribute; nil discards them.
	Logger *slog.Logger
	// LocalState, when set, is the node's local state (package
	// localstate): the pod source, the status sink and the volume sources
	// write through it, and an agent that starts while the API server does
	// not answer runs the pods it keeps (see Joined.Run). nil keeps
	// nothing, as upstream kubelet.
	LocalState *localstate.State
	// LocalStateAfter is how long the pod source waits for the first list
	// before it serves the kept pods; 0 means DefaultLocalStateAfter.
	LocalStateAfter time.Duration
	// Shared, when set, gives the node the adapters that many nodes of one
	// process share (NewShared): its services, configMap, secret and token
	// sources, and its event broadcaster, instead of its own. The caller
	// runs Shared.Run beside the nodes; Joined.Run waits for it to start.
	Shared *Shared
	// Clock times Run's wait for the access check and its retries, and the
	// Node's registration retries; nil means the real clock.
	Clock clock.Clock
}

// accessCheckWait is how long Run waits for the API server to answer the
// access check before it starts the node without a local state.
const accessCheckWait = 2 * time.Second

// Agent is what Run runs beside the adapters; *agent.Agent implements it.
type Agent interface {
	// NodeName returns the node's name, which must be the joined one.
	NodeName() string
	// Run runs the agent until ctx ends.
	Run(ctx context.Context) error
}

var _ Agent = (*agent.Agent)(nil)

// Joined is a node joined to an API server: the adapters that Apply puts
// into an agent's options (pods bound to the node, pod statuses, the Node
// and its Lease, mirror pods, events, configMaps, secrets, tokens and
// services all come from or go to the API server), and Run, which runs
// those with goroutines beside the agent. Build it with Join.
type Joined struct {
	client        kubernetes.Interface
	server        string // its URL, for the logs
	nodeName      string
	clock         clock.Clock
	leaseDuration time.Duration
	log           *slog.Logger

	status   *StatusSink
	nodes    *NodeSink
	mirrors  *MirrorPods
	volumes  *WatchingSources
	services *Services
	pods     *PodSource
	state    *localstate.State
	shared   *Shared
	updates  chan syncloop.PodUpdate
	recorder *GatedRecorder
	csiNodes *CSINodes

	ran atomic.Bool
}

// Join builds the adapters that join the node nodeName to the API server
// client talks to. nodeName is lower-cased and trimmed, as upstream and
// package agent do with a host name. Join checks its arguments (a missing
// client or node name, a lease duration that is negative or not whole
// seconds, NodeLabels, NodeTaints or ProviderID with SkipNodeRegistration
// are errors wrapping
// ErrInvalidArgument) and starts nothing: pass the result's Apply the
// agent's options, build the agent, and Run both.
//
// Give client's rest.Config upstream kubelet's limits (QPS 50, Burst 100,
// as minikubelet's --kube-api-qps and --kube-api-burst do): with
// client-go's default of 5 queries per second the agent's status patches,
// events and lease renewals queue behind each other, seconds late with a
// few pods.
func Join(client kubernetes.Interface, nodeName string, opts JoinOptions) (*Joined, error) {
	nodeName = strings.ToLower(strings.TrimSpace(nodeName))
	if client == nil {
		return nil, fmt.Errorf("join: client is nil: %w", ErrInvalidArgument)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("join: node name is empty: %w", ErrInvalidArgument)
	}
	if d := opts.NodeLeaseDuration; d < 0 || d%time.Second != 0 {
		return nil, fmt.Errorf("join node %s: NodeLeaseDuration %s is not a positive number of seconds: %w", nodeName, d, ErrInvalidArgument)
	}
	if opts.SkipNodeRegistration && (len(opts.NodeLabels) > 0 || len(opts.NodeTaints) > 0 || opts.ProviderID != "") {
		return nil, fmt.Errorf("join node %s: NodeLabels, NodeTaints and ProviderID are set at registration, and SkipNodeRegistration skips it: %w", nodeName, ErrInvalidArgument)
	}
	log := orDiscard(opts.Logger)
	j := &Joined{client: client, server: serverOf(client), nodeName: nodeName, clock: orClock(opts.Clock), leaseDuration: opts.NodeLeaseDuration, log: log,
		updates: make(chan syncloop.PodUpdate), recorder: &GatedRecorder{}, shared: opts.Shared,
		state: opts.LocalState, csiNodes: NewCSINodes(client, nodeName)}
	var err error
	if j.status, err = NewStatusSink(client, StatusSinkOptions{Logger: log.With("component", "api-status"), LocalState: opts.LocalState}); err != nil {
		return nil, fmt.Errorf("join node %s: %w", nodeName, err)
	}
	if j.nodes, err = NewNodeSink(client, nodeName, NodeSinkOptions{Logger: log.With("component", "api-node"), Clock: j.clock,
		Labels: opts.NodeLabels, Taints: opts.NodeTaints, ProviderID: opts.ProviderID, SkipRegistration: opts.SkipNodeRegistration}); err != nil {
		return nil, fmt.Errorf("join node %s: %w", nodeName, err)
	}
	if j.mirrors, err = NewMirrorPods(client, nodeName, MirrorPodsOptions{Logger: log.With("component", "api-mirror")}); err != nil {
		return nil, fmt.Errorf("join node %s: %w", nodeName, err)
	}
	if opts.Shared != nil {
		j.volumes, j.services = opts.Shared.volumes, opts.Shared.services
	} else {
		if j.volumes, err = NewWatchingSources(client, WatchingSourcesOptions{Logger: log.With("component", "api-volumes")}); err != nil {
			return nil, fmt.Errorf("join node %s: %w", nodeName, err)
		}
		if j.services, err = NewServices(client, ServicesOptions{Logger: log.With("component", "api-services"), LocalState: opts.LocalState}); err != nil {
			return nil, fmt.Errorf("join node %s: %w", nodeName, err)
		}
	}
	if j.pods, err = NewPodSource(client, nodeName, j.updates, PodSourceOptions{Logger: log.With("component", "api-source"),
		LocalState: opts.LocalState, LocalStateAfter: opts.LocalStateAfter}); err != nil {
		return nil, fmt.Errorf("join node %s: %w", nodeName, err)
	}
	return j, nil
}

// NodeName returns the joined node's name.
func (j *Joined) NodeName() string { return j.nodeName }

// ServiceAccounts returns the node's service accounts for image credential
// provider plugins with tokenAttributes
// (credentialprovider.Options.ServiceAccounts), on the joined client.
func (j *Joined) ServiceAccounts() *ServiceAccounts { return &ServiceAccounts{client: j.client} }

// Apply puts the adapters into an agent's options: it fills opts.Cluster,
// the agent's one seam for an API server, replacing what these fields held:
//
//	Updates         the pods bound to the node: PodSource's SETs once Run runs
//	                it, on an unbuffered channel (each waits for the agent)
//	StatusSink      pods/status (StatusSink)
//	NodeStatusSink  the Node and its status (NodeSink)
//	Leases          the node's Lease (NodeSink), and LeaseDuration
//	Node            the Node admission matches pods against (NodeSink.Node)
//	ReportHostIPs   true: pods report hostIP, as upstream's with an API server
//	MirrorPods      the static pods' mirror pods (MirrorPods)
//	Recorder        events, written while Run runs and dropped otherwise
//	Services        the services for containers' environment (Services)
//	ResourceClaims  the pods' ResourceClaims (ResourceClaims)
//	ResourceSlices  the deletion of the node's ResourceSlices, all at start
//	                and a gone DRA driver's (ResourceSlices)
//	CSINodes        the CSI drivers' CSINode entries, Node annotation and
//	                topology labels (CSINodes); Run makes the CSINode
//
// VolumeSources become configMaps, secrets and tokens from the API server
// (WatchingSources, through KeptSources with a LocalState), and its claims,
// persistent volumes and CSIDrivers (Claims), only when opts has none; RuntimeClasses stay the caller's, as no RuntimeClass is watched
// here. With a LocalState, HTTP.HealthChecks gain "apisource" (see
// Joined.HealthCheck). NodeName is set to the joined node's when empty;
// another name is an error wrapping ErrInvalidArgument. On an error opts is
// left as it was.
func (j *Joined) Apply(opts *agent.Options) error {
	if opts.NodeName != "" {
		if n := strings.ToLower(strings.TrimSpace(opts.NodeName)); n != j.nodeName {
			return fmt.Errorf("apply node %s: the options name node %q: %w", j.nodeName, opts.NodeName, ErrInvalidArgument)
		}
	}
	volumes := opts.Cluster.VolumeSources
	if volumes.ConfigMaps == nil && volumes.Secrets == nil && volumes.Tokens == nil {
		volumes = j.volumes.Sources()
		if j.state != nil {
			kept, err := NewKeptSources(volumes, j.state, KeptSourcesOptions{Logger: j.log.With("component", "api-volumes")})
			if err != nil {
				return fmt.Errorf("apply node %s: %w", j.nodeName, err)
			}
			volumes = kept.Sources()
		}
	}
	if opts.NodeName == "" {
		opts.NodeName = j.nodeName
	}
	opts.Cluster = agent.ClusterOptions{
		Updates:        j.updates,
		StatusSink:     j.status,
		NodeStatusSink: j.nodes,
		Leases:         j.nodes,
		LeaseDuration:  j.leaseDuration,
		Node:           j.nodes,
		ReportHostIPs:  true,
		MirrorPods:     j.mirrors,
		Recorder:       j.recorder,
		VolumeSources:  volumes,
		Services:       j.services,
		RuntimeClasses: opts.Cluster.RuntimeClasses,
		ResourceClaims: NewResourceClaims(j.client),
		ResourceSlices: NewResourceSlices(j.client, j.nodeName),
		CSINodes:       j.csiNodes,
	}
	if j.state != nil {
		opts.HTTP.HealthChecks = append(opts.HTTP.HealthChecks, j.HealthCheck())
	}
	return nil
}

// HealthCheck is /healthz's check "apisource": it always passes (a node
// that runs its pods from the local state is healthy), and while the pod
// source serves the local state's pods its verbose line says so:
//
//	[+]apisource ok: serving 3 pods from the local state since 2026-11-25T21:50:00Z: the API server has not answered
func (j *Joined) HealthCheck() server.HealthCheck {
	return server.HealthCheck{
		Name:  "apisource",
		Check: func(*http.Request) error { return nil },
		Detail: func() string {
			on, n, since := j.pods.FromLocalState()
			if !on {
				return ""
			}
			return fmt.Sprintf("serving %d pods from the local state since %s: the API server has not answered", n, since.UTC().Format(time.RFC3339))
		},
	}
}

// Pods returns the pod source.
func (j *Joined) Pods() *PodSource { return j.pods }

// StatusSink returns the status sink.
func (j *Joined) StatusSink() *StatusSink { return j.status }

// Run runs the agent a, built from options that Apply filled, joined to
// the API server until ctx ends. First it checks the node's permissions
// (CheckAccess): a refusal (ErrAccessDenied, or any answer that is not
// NotAnswering: a 401, a 403) is returned before the agent starts. An API
// server that does not answer (NotAnswering) within the wait (the pod
// source's LocalStateAfter with a LocalState, 2s without) does not hold the
// node back, as upstream kubelet does not wait for its server: a warning
// names the server, the node starts (its static pods run, and with a
// LocalState its kept pods) and the check is tried again with back-off
// (800ms doubling to 7s) until the server answers. A refusal then ends Run
// as it would have at start, once it has lasted 30s: a kube-apiserver that
// has just started refuses requests until its authorizers have synced.
// Meanwhile the adapters retry on their own: the pod source lists and
// watches with back-off, the Node is registered once the server answers
// (NodeSink), then the lease, the mirror pods and the pod statuses follow.
//
// Then it starts the event recorder (and records EventLocalStateDamaged on
// the node when the local state's file was found damaged) and runs the
// agent, the pod source, the watches of the volume sources and the
// services' watch side by side. When any of them returns, Run ends the
// others; it returns once every one has ended and the recorder has
// stopped, with the first error (nil when ctx ended). Run may be called
// once.
//
// A node joined with JoinOptions.Shared first waits for the shared
// adapters' Run to start (or ctx to end), records its events through their
// broadcaster, and leaves their watches to them: it runs the agent and its
// pod source.
func (j *Joined) Run(ctx context.Context, a Agent) error {
	if got := a.NodeName(); got != j.nodeName {
		return fmt.Errorf("run node %s: the agent runs node %q: %w", j.nodeName, got, ErrInvalidArgument)
	}
	if !j.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("run node %s: already run: %w", j.nodeName, ErrInvalidArgument)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	pending, err := j.checkAccess(ctx)
	if err != nil {
		return fmt.Errorf("run node %s: %w", j.nodeName, err)
	}
	if pending != nil {
		wg.Go(func() {
			if err := j.recheckAccess(ctx, pending); err != nil {
				fail(fmt.Errorf("run node %s: %w", j.nodeName, err))
			}
		})
	}
	if j.shared != nil {
		if err := j.shared.wait(ctx); err != nil {
			cancel()
			wg.Wait()
			if first != nil {
				return first
			}
			return fmt.Errorf("run node %s: waiting for the shared adapters: %w", j.nodeName, err)
		}
		defer j.recorder.startWith(j.shared.recorder(j.nodeName), func() {})()
	} else {
		defer j.recorder.Start(j.client, j.nodeName)()
	}
	j.recordLocalStateDamage()

	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			defer cancel()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				fail(fmt.Errorf("run node %s: %s: %w", j.nodeName, name, err))
			}
		})
	}
	run("agent", a.Run)
	run("pod source", j.pods.Run)
	if j.state != nil {
		wg.Go(func() { j.flushStatuses(ctx) })
	}
	// The CSINode, once the Node is there, as upstream's kubelet makes it
	// whether or not a CSI driver registers.
	wg.Go(func() {
		if err := j.csiNodes.EnsureLoop(ctx, j.clock); err == nil {
			j.log.Debug("CSINode present", "node", j.nodeName)
		}
	})
	if j.shared == nil {
		run("volume sources", j.volumes.Run)
		run("services", j.services.Run)
		run("node watch", j.nodes.Watch)
	}
	wg.Wait()
	return first
}

// checkAccess starts CheckAccess and waits for it at most the pod source's
// LocalStateAfter with a local state, accessCheckWait without. It returns
// a refusal; nil and nil when access is granted; and when the server does
// not answer, a warning is logged and it returns the channel on which the
// check started will send its result.
func (j *Joined) checkAccess(ctx context.Context) (pending <-chan error, err error) {
	wait := accessCheckWait
	if j.state != nil {
		wait = j.pods.after
	}
	done := make(chan error, 1)
	go func() { done <- CheckAccess(ctx, j.client, j.nodeName) }()
	t := j.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case err = <-done:
		if err == nil || ctx.Err() != nil || !NotAnswering(err) {
			return nil, err
		}
		pending = oneError(err)
	case <-t.C():
		err = fmt.Errorf("check access: no answer within %s", wait)
		pending = done
	}
	if j.state != nil {
		j.log.Warn("the API server does not answer: starting the node (its static pods and the local state's) and retrying with back-off", "server", j.server, "err", err)
	} else {
		j.log.Warn("the API server does not answer: starting the node (its static pods) and retrying with back-off", "server", j.server, "err", err)
	}
	return pending, nil
}

// oneError returns a channel that holds err.
func oneError(err error) <-chan error {
	c := make(chan error, 1)
	c <- err
	return c
}

// refusalGrace is how long a refusal of a server that comes back after
// the node started is checked again before it stops the node: a
// kube-apiserver that has just started refuses requests (403) until its
// authorizers have synced.
const refusalGrace = 30 * time.Second

// recheckAccess takes the result of the check started (pending) and checks
// the node's access again with back-off while the server does not answer,
// and for refusalGrace after its first refusal. It returns the refusal, or
// nil when access is granted or ctx ends.
func (j *Joined) recheckAccess(ctx context.Context, pending <-chan error) error {
	start := j.clock.Now()
	var refusedAt time.Time
	retry := func(err error) bool {
		if NotAnswering(err) {
			return true
		}
		if refusedAt.IsZero() {
			refusedAt = j.clock.Now()
			j.log.Warn("the API server refuses the node's access; checking again in case it has just started", "server", j.server, "for", refusalGrace, "err", err)
		}
		return j.clock.Since(refusedAt) < refusalGrace
	}
	err := untilAnswered.doIf(ctx, j.clock, retry, func(ctx context.Context) error {
		if pending != nil {
			err := <-pending
			pending = nil
			return err
		}
		return CheckAccess(ctx, j.client, j.nodeName)
	})
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("the API server answered after %s: %w", j.clock.Since(start).Round(time.Millisecond), err)
	}
	j.log.Info("the API server answers: the node's access is granted", "server", j.server, "after", j.clock.Since(start).Round(time.Millisecond))
	return nil
}

// flushStatuses sends the statuses the local state keeps as
// unacknowledged once the API server has listed the node's pods.
func (j *Joined) flushStatuses(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-j.pods.Listed():
	}
	if _, err := j.status.Flush(ctx); err != nil && ctx.Err() == nil {
		j.log.Error("cannot send some unacknowledged statuses; they stay kept", "err", err)
	}
}
