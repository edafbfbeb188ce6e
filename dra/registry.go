package dra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	"k8s.io/utils/clock"
)

// DefaultCallTimeout bounds each NodePrepareResources and
// NodeUnprepareResources call to a DRA driver's kubelet plugin, upstream's
// 45 seconds.
const DefaultCallTimeout = 45 * time.Second

// Services are the gRPC services of the DRA kubelet plugin API the node
// speaks, the preferred first: a plugin lists the ones it serves as its
// "supported versions" when it registers.
var Services = []string{drav1.DRAPluginService, drav1beta1.DRAPluginService}

// Registry holds the DRA drivers' kubelet plugins registered on the node,
// as upstream's DRA plugin manager: the Handler of plugin type DRAPlugin
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1) for package
// pluginmanager, which calls ValidatePlugin, RegisterPlugin and
// DeRegisterPlugin as plugins announce themselves and go. A driver may
// have several plugins (a rolling update starts the new one before the old
// one goes); the latest that is connected serves it, else the latest.
//
// With Options.Slices, the Registry follows each plugin's connection (a
// stats handler on it, as upstream's) and deletes a driver's
// ResourceSlices once it has had no connected plugin for
// Options.WipingDelay (see the package doc, ResourceSlices).
//
// A Registry is made by New, one per Manager (Manager.Registry). Its
// methods are safe for concurrent use. Each registered plugin has a
// goroutine that reads its health stream, and each pending wipe of a
// driver's ResourceSlices one that waits for its time; Close ends them and
// closes the connections of the plugins still registered.
type Registry struct {
	timeout time.Duration
	log     *slog.Logger
	dial    Dialer
	clock   clock.Clock
	metrics Metrics // nil: the calls are not timed
	// watch reads a plugin's health stream until it ends (the Manager's
	// watchHealth).
	watch func(ctx context.Context, driver string, stream drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesClient) error

	// slices deletes the ResourceSlices of a driver gone for wipingDelay
	// (nil: nothing is deleted).
	slices      ResourceSlices
	wipingDelay time.Duration
	ctx         context.Context // ends with Close: the wipes stop
	cancel      context.CancelFunc
	wipes       sync.WaitGroup // the goroutines of the pending wipes

	mu      sync.Mutex
	plugins map[string][]*plugin    // by driver, in the order they registered
	pending map[string]*pendingWipe // by driver
	closed  bool
}

// plugin is one registered kubelet plugin of a DRA driver.
type plugin struct {
	driver   string
	endpoint string
	service  string // the chosen one of Services
	conn     *grpc.ClientConn
	timeout  time.Duration

	stopWatch context.CancelFunc // ends the health stream's goroutine
	watching  chan struct{}      // closed when it has ended

	// Guarded by the Registry's mu.
	connected bool // its connection is up (connMonitor)
	removed   bool // deregistered: its connection's news no longer count
}

// Dialer connects to a DRA plugin's endpoint, for the gRPC connection the
// Registry keeps to it. DialUnix, the default, dials the endpoint as a
// unix socket's path.
type Dialer func(ctx context.Context, endpoint string) (net.Conn, error)

// DialUnix dials endpoint as the path of a unix socket.
func DialUnix(ctx context.Context, endpoint string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", endpoint)
}

// stop ends the plugin's health stream and closes its connection, and
// returns once the stream's goroutine has ended.
func (p *plugin) stop() error {
	p.stopWatch()
	err := p.conn.Close()
	<-p.watching
	return err
}

// ValidatePlugin checks that a plugin of driver name serves one of the
// Services, with upstream's errors: "invalid supported gRPC versions of DRA
// driver plugin NAME at endpoint EP: empty list of supported gRPC services
// (aka supported versions)" or "...: none of services supported by the
// plugin ([...]) are supported by the kubelet ([...])".
func (r *Registry) ValidatePlugin(name, endpoint string, versions []string) error {
	_, err := chooseService(name, endpoint, versions)
	return err
}

// chooseService is the first of Services that versions lists.
func chooseService(name, endpoint string, versions []string) (string, error) {
	var err error
	switch {
	case len(versions) == 0:
		err = errors.New("empty list of supported gRPC services (aka supported versions)")
	default:
		for _, s := range Services {
			if slices.Contains(versions, s) {
				return s, nil
			}
		}
		err = fmt.Errorf("none of services supported by the plugin (%q) are supported by the kubelet (%q)", versions, Services)
	}
	return "", fmt.Errorf("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %w", name, endpoint, err)
}

// RegisterPlugin adds the plugin of driver name at endpoint (a unix
// socket's path, dialed by Options.Dialer), speaking the first of Services
// it lists. Its connection is made at once and connects in the
// background; the calls wait for it. A goroutine then keeps the plugin's
// health stream open (NodeWatchResources of the v1alpha1
// DRAResourceHealth service, opened again HealthRetryPeriod after it ends
// or fails, as upstream's: a plugin that does not serve it fails every
// time) until the plugin is deregistered. A second plugin at an endpoint
// the driver already has is refused ("endpoint EP already registered for
// DRA driver plugin NAME"), as upstream's. With Options.Metrics, every
// unary call on the connection is timed for Metrics.ObserveCall. Until
// the connection is up the driver counts as gone: a plugin that never
// answers gets its driver's ResourceSlices deleted after
// Options.WipingDelay, as upstream's. ctx is not kept.
func (r *Registry) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	service, err := chooseService(name, endpoint, versions)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.plugins[name] {
		if p.endpoint == endpoint {
			return fmt.Errorf("endpoint %s already registered for DRA driver plugin %s", endpoint, name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &plugin{driver: name, endpoint: endpoint, service: service, timeout: r.timeout,
		stopWatch: cancel, watching: make(chan struct{})}
	dialOpts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return r.dial(ctx, endpoint) }),
		grpc.WithStatsHandler(connMonitor{r: r, p: p})}
	if r.metrics != nil {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(callTimer(r.metrics, r.clock, name)))
	}
	conn, err := grpc.NewClient("passthrough:///"+endpoint, dialOpts...)
	if err != nil {
		cancel()
		return fmt.Errorf("create gRPC connection to DRA driver %s plugin at endpoint %s: %w", name, endpoint, err)
	}
	p.conn = conn
	go func() {
		defer close(p.watching)
		r.watchPlugin(ctx, p)
	}()
	conn.Connect()
	r.plugins[name] = append(r.plugins[name], p)
	r.log.Info("Registered DRA plugin", "driver", name, "endpoint", endpoint, "service", service, "plugins", len(r.plugins[name]))
	r.sync(name) // not connected yet: a plugin that never connects gets its driver's slices wiped
	return nil
}

// DeRegisterPlugin removes the plugin of driver name at endpoint, ends its
// health stream (its devices' health is then Unknown) and closes its
// connection. When the driver has no other connected plugin, its
// ResourceSlices are deleted (Options.Slices) unless one connects within
// Options.WipingDelay, as upstream's.
func (r *Registry) DeRegisterPlugin(name, endpoint string) {
	r.mu.Lock()
	plugins := r.plugins[name]
	i := slices.IndexFunc(plugins, func(p *plugin) bool { return p.endpoint == endpoint })
	if i < 0 {
		r.mu.Unlock()
		return
	}
	p := plugins[i]
	p.removed = true
	if len(plugins) == 1 {
		delete(r.plugins, name)
	} else {
		r.plugins[name] = slices.Delete(plugins, i, i+1)
	}
	left := len(r.plugins[name])
	r.sync(name)
	r.mu.Unlock()
	if err := p.stop(); err != nil {
		r.log.Error("Failed to close the connection of a DRA plugin", "driver", name, "endpoint", endpoint, "err", err)
	}
	r.log.Info("Deregistered DRA plugin", "driver", name, "endpoint", endpoint, "plugins", left)
}

// Drivers are the names of the drivers with a registered plugin, sorted.
func (r *Registry) Drivers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.plugins))
}

// Close deregisters every plugin, ends its health stream and closes its
// connection, and cancels the pending wipes of ResourceSlices, those
// under way and WipeAll's; it returns once the streams' and the wipes'
// goroutines have ended. No slice is deleted for the plugins it
// deregisters (a node that stops leaves its slices, as upstream's).
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	r.cancel()
	all := r.plugins
	r.plugins = map[string][]*plugin{}
	for _, plugins := range all {
		for _, p := range plugins {
			p.removed = true
		}
	}
	r.mu.Unlock()
	for _, plugins := range all {
		for _, p := range plugins {
			_ = p.stop()
		}
	}
	r.wipes.Wait()
}

// plugin is the plugin that serves driver, or upstream's error: "DRA
// driver name is empty", "DRA driver NAME is not registered"
// (ErrDriverNotRegistered).
func (r *Registry) plugin(driver string) (*plugin, error) {
	if driver == "" {
		return nil, errors.New("DRA driver name is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	plugins := r.plugins[driver]
	if len(plugins) == 0 {
		return nil, fmt.Errorf("DRA driver %s is %w", driver, ErrDriverNotRegistered)
	}
	for i := len(plugins) - 1; i >= 0; i-- {
		if plugins[i].conn.GetState() == connectivity.Ready {
			return plugins[i], nil
		}
	}
	return plugins[len(plugins)-1], nil
}

// prepare calls NodePrepareResources, bounded by the plugin's timeout, in
// the service it chose (v1beta1's messages converted from and to v1's).
func (p *plugin) prepare(ctx context.Context, req *drav1.NodePrepareResourcesRequest) (*drav1.NodePrepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.client().NodePrepareResources(ctx, req)
}

// unprepare calls NodeUnprepareResources as prepare calls
// NodePrepareResources.
func (p *plugin) unprepare(ctx context.Context, req *drav1.NodeUnprepareResourcesRequest) (*drav1.NodeUnprepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.client().NodeUnprepareResources(ctx, req)
}

func (p *plugin) client() drav1.DRAPluginClient {
	if p.service == drav1beta1.DRAPluginService {
		return drav1beta1.V1Beta1ClientWrapper{DRAPluginClient: drav1beta1.NewDRAPluginClient(p.conn)}
	}
	return drav1.NewDRAPluginClient(p.conn)
}
