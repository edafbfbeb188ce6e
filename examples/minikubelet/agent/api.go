package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// APIOptions join the agent to a Kubernetes API server: pods bound to the
// node come from it (beside the static pods), statuses, events, the Node and
// its Lease go to it, static pods get mirror pods, and configMaps, secrets
// and service account tokens for volumes come from it.
type APIOptions struct {
	// Client talks to the API server. Required. Give its rest.Config
	// upstream kubelet's limits (QPS 50, Burst 100, as minikubelet's
	// --kube-api-qps and --kube-api-burst do): with client-go's default of
	// 5 queries per second the agent's status patches, events and lease
	// renewals queue behind each other, seconds late with a few pods.
	Client kubernetes.Interface
	// NodeLabels are added to the Node when it is registered (upstream's
	// --node-labels).
	NodeLabels map[string]string
	// SkipNodeRegistration leaves the Node to someone else (upstream's
	// --register-node=false): the agent only updates the status of a Node
	// that exists, and renews its lease.
	SkipNodeRegistration bool
	// NodeLeaseDuration is the lease's duration; it is renewed every
	// quarter of it. 0 means upstream's 40s (nodeLeaseDurationSeconds).
	NodeLeaseDuration time.Duration
}

// api is what the agent holds in API-server mode.
type api struct {
	client   kubernetes.Interface
	status   *apiserver.StatusSink
	nodes    *apiserver.NodeSink
	mirrors  *apiserver.MirrorPods
	volumes  *apiserver.WatchingSources
	services *apiserver.Services

	mu       sync.Mutex
	recorder record.EventRecorder // set while Run runs
}

// newAPI builds the adapters; it starts nothing.
func (a *Agent) newAPI() error {
	o := a.opts.API
	if o.Client == nil {
		return fmt.Errorf("API.Client is required: %w", ErrInvalidOptions)
	}
	if o.NodeLeaseDuration < 0 || (o.NodeLeaseDuration > 0 && o.NodeLeaseDuration%time.Second != 0) {
		return fmt.Errorf("API.NodeLeaseDuration %s is not a positive number of seconds: %w", o.NodeLeaseDuration, ErrInvalidOptions)
	}
	if o.SkipNodeRegistration && len(o.NodeLabels) > 0 {
		return fmt.Errorf("API.NodeLabels are set at registration, and API.SkipNodeRegistration skips it: %w", ErrInvalidOptions)
	}
	x := &api{client: o.Client}
	var err error
	if x.status, err = apiserver.NewStatusSink(o.Client, apiserver.StatusSinkOptions{Logger: a.log.With("component", "api-status")}); err != nil {
		return err
	}
	if x.nodes, err = apiserver.NewNodeSink(o.Client, a.opts.NodeName, apiserver.NodeSinkOptions{Logger: a.log.With("component", "api-node"), Labels: o.NodeLabels, SkipRegistration: o.SkipNodeRegistration}); err != nil {
		return err
	}
	if x.mirrors, err = apiserver.NewMirrorPods(o.Client, a.opts.NodeName, apiserver.MirrorPodsOptions{Logger: a.log.With("component", "api-mirror")}); err != nil {
		return err
	}
	if x.volumes, err = apiserver.NewWatchingSources(o.Client, apiserver.WatchingSourcesOptions{Logger: a.log.With("component", "api-volumes")}); err != nil {
		return err
	}
	if x.services, err = apiserver.NewServices(o.Client, apiserver.ServicesOptions{Logger: a.log.With("component", "api-services")}); err != nil {
		return err
	}
	a.api = x
	if a.opts.VolumeSources.ConfigMaps == nil && a.opts.VolumeSources.Secrets == nil && a.opts.VolumeSources.Tokens == nil {
		a.opts.VolumeSources = x.volumes.Sources()
	}
	return nil
}

// startAPI checks the agent's permissions, starts the event recorder, the
// pod source, the volume sources' watches and the services' watch.
func (a *Agent) startAPI(ctx context.Context, g *group) error {
	if err := apiserver.CheckAccess(ctx, a.api.client, a.opts.NodeName); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	rec, stop := apiserver.NewRecorder(a.api.client, a.opts.NodeName)
	a.api.mu.Lock()
	a.api.recorder = rec
	a.api.mu.Unlock()
	g.go_("api-recorder", func() error {
		<-ctx.Done()
		a.api.mu.Lock()
		a.api.recorder = nil
		a.api.mu.Unlock()
		stop()
		return nil
	})
	src, err := apiserver.NewPodSource(a.api.client, a.opts.NodeName, a.config.Channel(ctx, syncloop.SourceAPI),
		apiserver.PodSourceOptions{Logger: a.log.With("component", "api-source")})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	g.go_("api-source", func() error { return src.Run(ctx) })
	g.go_("api-volumes", func() error { return a.api.volumes.Run(ctx) })
	g.go_("api-services", func() error { return a.api.services.Run(ctx) })
	return nil
}

// apiEvent forwards an event to the API server while the recorder runs.
func (x *api) event(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	x.mu.Lock()
	rec := x.recorder
	x.mu.Unlock()
	if rec != nil {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

// syncMirrorPods creates the mirror pods of static pods that lack one,
// recreates outdated ones and deletes orphans, as upstream's housekeeping.
func (a *Agent) syncMirrorPods(ctx context.Context) {
	var static []*v1.Pod
	for _, p := range a.pods.GetPods() {
		if syncloop.IsStaticPod(p) && !a.workers.IsPodTerminationRequested(p.UID) {
			static = append(static, p)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := a.api.mirrors.Sync(ctx, static, a.pods.GetMirrorPods()); err != nil {
		a.log.Warn("Mirror pods not in sync", "err", err)
	}
}

var _ status.Sink = (*apiserver.StatusSink)(nil)
