package dratest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// Method names a DRA call.
type Method string

// The DRA calls.
const (
	NodePrepareResources   Method = "NodePrepareResources"
	NodeUnprepareResources Method = "NodeUnprepareResources"
)

// Call is a call the plugin answered: the method, the service it came
// through (drav1.DRAPluginService or drav1beta1.DRAPluginService) and its
// claims.
type Call struct {
	Method  Method
	Service string
	Claims  []Claim
}

// Claim is a claim of a call.
type Claim struct {
	Namespace, UID, Name string
}

// Options configure a Plugin.
type Options struct {
	// Driver is the DRA driver's name. Required.
	Driver string
	// Endpoint is the path of the unix socket to serve on. Required.
	Endpoint string
	// Services are the services served (drav1.DRAPluginService,
	// drav1beta1.DRAPluginService). Nil: both.
	Services []string
	// Health serves the health service too (v1alpha1 DRAResourceHealth):
	// NodeWatchResources sends the health SetHealth set, at once and
	// whenever it is set again.
	Health bool
	// InMemory serves no socket: Dial makes each connection, in memory,
	// served by goroutines of the caller's, so that a test inside a
	// testing/synctest bubble can keep connections to the plugin (a
	// goroutine reading a socket is never durably blocked, and the bubble
	// would never settle). Endpoint is then only the name the plugin
	// registers with. Start such a plugin inside the bubble.
	InMemory bool
}

// Plugin is a fake DRA kubelet plugin. Its methods are safe for concurrent
// use.
type Plugin struct {
	opts Options
	srv  *grpc.Server
	done chan struct{}
	mem  *bufconn.Listener // InMemory

	mu         sync.Mutex
	devices    map[string][]*drav1.Device // by claim name
	claimErrs  map[string]string          // by claim name
	callErrs   map[Method]error
	prepared   map[string]bool // claim UIDs
	calls      []Call
	omitClaims bool
	health     []*drahealthv1alpha1.DeviceHealth
	healthSeq  int                        // how often SetHealth was called
	watchers   map[chan struct{}]struct{} // the open health streams, told of a new SetHealth
}

// Start serves the plugin on Options.Endpoint until Stop.
func Start(opts Options) (*Plugin, error) {
	if opts.Driver == "" || opts.Endpoint == "" {
		return nil, errors.New("dratest: Driver and Endpoint are required")
	}
	if opts.Services == nil {
		opts.Services = []string{drav1.DRAPluginService, drav1beta1.DRAPluginService}
	}
	p := &Plugin{opts: opts, srv: grpc.NewServer(), done: make(chan struct{}),
		devices: map[string][]*drav1.Device{}, claimErrs: map[string]string{}, callErrs: map[Method]error{}, prepared: map[string]bool{},
		watchers: map[chan struct{}]struct{}{}}
	var l net.Listener
	if opts.InMemory {
		p.mem = bufconn.Listen(1 << 16)
		l = p.mem
	} else {
		var err error
		if l, err = net.Listen("unix", opts.Endpoint); err != nil {
			return nil, err
		}
	}
	for _, s := range opts.Services {
		switch s {
		case drav1.DRAPluginService:
			drav1.RegisterDRAPluginServer(p.srv, &service{p: p, name: s})
		case drav1beta1.DRAPluginService:
			drav1beta1.RegisterDRAPluginServer(p.srv, drav1beta1.V1ServerWrapper{DRAPluginServer: &service{p: p, name: s}})
		default:
			_ = l.Close()
			return nil, errors.New("dratest: unknown service " + s)
		}
	}
	if opts.Health {
		drahealthv1alpha1.RegisterDRAResourceHealthServer(p.srv, &healthService{p: p})
	}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(l)
	}()
	return p, nil
}

// Stop stops serving, ends the calls in progress and removes the socket.
func (p *Plugin) Stop() {
	p.srv.Stop()
	<-p.done
}

// Dial connects to an InMemory plugin, whatever endpoint says; a plugin
// on a socket is dialed there. Its signature is dra.Dialer's.
func (p *Plugin) Dial(ctx context.Context, endpoint string) (net.Conn, error) {
	if p.mem == nil {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.opts.Endpoint)
	}
	return p.mem.DialContext(ctx)
}

// Dialer dials each plugin's Endpoint with the plugin's Dial, and refuses
// any other endpoint: a dra.Dialer for a node whose DRA plugins are these.
func Dialer(plugins ...*Plugin) func(ctx context.Context, endpoint string) (net.Conn, error) {
	return func(ctx context.Context, endpoint string) (net.Conn, error) {
		for _, p := range plugins {
			if p.opts.Endpoint == endpoint {
				return p.Dial(ctx, endpoint)
			}
		}
		return nil, fmt.Errorf("dratest: no plugin at %s", endpoint)
	}
}

// SetHealth sets the devices' health that NodeWatchResources streams, and
// sends it on every open stream (Health).
func (p *Plugin) SetHealth(devices ...*drahealthv1alpha1.DeviceHealth) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.health = devices
	p.healthSeq++
	for w := range p.watchers {
		select {
		case w <- struct{}{}:
		default: // told already
		}
	}
}

// Watchers is the number of health streams open.
func (p *Plugin) Watchers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watchers)
}

// Driver is the driver's name.
func (p *Plugin) Driver() string { return p.opts.Driver }

// Endpoint is the socket the plugin serves on.
func (p *Plugin) Endpoint() string { return p.opts.Endpoint }

// Services are the services the plugin serves, for its registration's
// supported versions.
func (p *Plugin) Services() []string { return slices.Clone(p.opts.Services) }

// SetDevices sets the devices NodePrepareResources answers for the claim
// of that name.
func (p *Plugin) SetDevices(claim string, devices ...*drav1.Device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.devices[claim] = devices
}

// FailClaim makes both calls answer the claim of that name with the error
// msg (its per-claim error); "" clears it.
func (p *Plugin) FailClaim(claim, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimErrs[claim] = msg
}

// Fail makes the method fail as a whole with err; nil clears it.
func (p *Plugin) Fail(m Method, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.callErrs[m] = err
}

// OmitClaims makes both calls answer no claim at all (a driver that skips
// them).
func (p *Plugin) OmitClaims(omit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.omitClaims = omit
}

// Calls are the calls answered so far, in order.
func (p *Plugin) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// Prepared are the UIDs of the claims prepared and not unprepared since,
// sorted.
func (p *Plugin) Prepared() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.prepared))
}

// service is the DRA service as one of its versions serves it.
type service struct {
	drav1.UnimplementedDRAPluginServer
	p    *Plugin
	name string
}

func (s *service) record(m Method, claims []*drav1.Claim) error {
	c := Call{Method: m, Service: s.name}
	for _, cl := range claims {
		c.Claims = append(c.Claims, Claim{Namespace: cl.GetNamespace(), UID: cl.GetUid(), Name: cl.GetName()})
	}
	s.p.calls = append(s.p.calls, c)
	return s.p.callErrs[m]
}

func (s *service) NodePrepareResources(_ context.Context, req *drav1.NodePrepareResourcesRequest) (*drav1.NodePrepareResourcesResponse, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if err := s.record(NodePrepareResources, req.GetClaims()); err != nil {
		return nil, err
	}
	resp := &drav1.NodePrepareResourcesResponse{Claims: map[string]*drav1.NodePrepareResourceResponse{}}
	if s.p.omitClaims {
		return resp, nil
	}
	for _, c := range req.GetClaims() {
		if msg := s.p.claimErrs[c.GetName()]; msg != "" {
			resp.Claims[c.GetUid()] = &drav1.NodePrepareResourceResponse{Error: msg}
			continue
		}
		s.p.prepared[c.GetUid()] = true
		resp.Claims[c.GetUid()] = &drav1.NodePrepareResourceResponse{Devices: s.p.devices[c.GetName()]}
	}
	return resp, nil
}

func (s *service) NodeUnprepareResources(_ context.Context, req *drav1.NodeUnprepareResourcesRequest) (*drav1.NodeUnprepareResourcesResponse, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if err := s.record(NodeUnprepareResources, req.GetClaims()); err != nil {
		return nil, err
	}
	resp := &drav1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1.NodeUnprepareResourceResponse{}}
	if s.p.omitClaims {
		return resp, nil
	}
	for _, c := range req.GetClaims() {
		if msg := s.p.claimErrs[c.GetName()]; msg != "" {
			resp.Claims[c.GetUid()] = &drav1.NodeUnprepareResourceResponse{Error: msg}
			continue
		}
		delete(s.p.prepared, c.GetUid())
		resp.Claims[c.GetUid()] = &drav1.NodeUnprepareResourceResponse{}
	}
	return resp, nil
}

// healthService is the health service of the plugin.
type healthService struct {
	drahealthv1alpha1.UnimplementedDRAResourceHealthServer
	p *Plugin
}

// NodeWatchResources sends the health SetHealth set, if it was, then each
// new one, until the node ends the stream or the plugin stops.
func (s *healthService) NodeWatchResources(_ *drahealthv1alpha1.NodeWatchResourcesRequest, stream drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesServer) error {
	w := make(chan struct{}, 1)
	s.p.mu.Lock()
	s.p.watchers[w] = struct{}{}
	if s.p.healthSeq > 0 {
		w <- struct{}{}
	}
	s.p.mu.Unlock()
	defer func() {
		s.p.mu.Lock()
		delete(s.p.watchers, w)
		s.p.mu.Unlock()
	}()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-w:
		}
		s.p.mu.Lock()
		resp := &drahealthv1alpha1.NodeWatchResourcesResponse{Devices: s.p.health}
		s.p.mu.Unlock()
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// SocketDir is a new directory for a test's unix sockets, removed when the
// test ends. It is short, under the system's temporary directory, since a
// socket's path may hold at most 108 bytes and t.TempDir's can pass that.
func SocketDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
