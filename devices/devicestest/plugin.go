package devicestest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Method names, as Calls records them.
const (
	GetDevicePluginOptions = "GetDevicePluginOptions"
	ListAndWatch           = "ListAndWatch"
	GetPreferredAllocation = "GetPreferredAllocation"
	Allocate               = "Allocate"
	PreStartContainer      = "PreStartContainer"
)

// DefaultEnv is the variable the default Allocate answer sets to the
// allocated device IDs, joined by commas.
const DefaultEnv = "DEVICESTEST_DEVICES"

// Plugin is a device plugin for one resource. Set its fields before Start.
type Plugin struct {
	// Resource is the extended resource it serves.
	Resource string
	// Options are what GetDevicePluginOptions answers (nil: none).
	Options *pluginapi.DevicePluginOptions
	// Fail is asked at each call with the method's name; an error fails
	// the call. Nil: nothing fails.
	Fail func(method string) error
	// Answer builds Allocate's answer for one container's devices (nil:
	// DefaultEnv set to the IDs).
	Answer func(ids []string) *pluginapi.ContainerAllocateResponse
	// Prefer answers GetPreferredAllocation (nil: the first devices
	// available, must-include ones first).
	Prefer func(req *pluginapi.ContainerPreferredAllocationRequest) []string

	pluginapi.UnimplementedDevicePluginServer

	mu      sync.Mutex
	devices []*pluginapi.Device
	changed chan struct{} // closed and replaced when devices change
	broken  chan struct{} // closed by Break
	brkErr  error
	calls   []string
	srv     *grpc.Server
	done    chan struct{}
	socket  string
}

// New returns a plugin for resource listing devs.
func New(resource string, devs ...*pluginapi.Device) *Plugin {
	return &Plugin{Resource: resource, devices: cloneDevices(devs), changed: make(chan struct{}), broken: make(chan struct{})}
}

// Healthy and Unhealthy return devices with the given IDs.
func Healthy(ids ...string) []*pluginapi.Device { return withHealth(pluginapi.Healthy, ids) }

// Unhealthy returns unhealthy devices with the given IDs.
func Unhealthy(ids ...string) []*pluginapi.Device { return withHealth(pluginapi.Unhealthy, ids) }

func withHealth(h string, ids []string) []*pluginapi.Device {
	out := make([]*pluginapi.Device, len(ids))
	for i, id := range ids {
		out[i] = &pluginapi.Device{ID: id, Health: h}
	}
	return out
}

func cloneDevices(devs []*pluginapi.Device) []*pluginapi.Device {
	out := make([]*pluginapi.Device, len(devs))
	for i, d := range devs {
		out[i] = proto.Clone(d).(*pluginapi.Device)
	}
	return out
}

// Start serves the plugin on the socket dir/endpoint.
func (p *Plugin) Start(dir, endpoint string) error {
	sock := filepath.Join(dir, endpoint)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("devicestest: %w", err)
	}
	p.mu.Lock()
	p.srv, p.socket, p.done = grpc.NewServer(), sock, make(chan struct{})
	srv, done := p.srv, p.done
	p.mu.Unlock()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	return nil
}

// Register asks the device manager listening on kubeletSocket to register
// the plugin, served on endpoint (a socket name in the manager's
// directory), and returns the manager's answer.
func (p *Plugin) Register(ctx context.Context, kubeletSocket, endpoint string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: p.Resource, Options: p.Options,
	})
	return err
}

// StartAndRegister starts the plugin on a socket named after the resource
// in the manager's directory (the directory of kubeletSocket) and registers
// it.
func (p *Plugin) StartAndRegister(ctx context.Context, kubeletSocket string) error {
	endpoint := fmt.Sprintf("%s-%d.sock", strings.NewReplacer("/", "_", ".", "_").Replace(p.Resource), endpoints.Add(1))
	if err := p.Start(filepath.Dir(kubeletSocket), endpoint); err != nil {
		return err
	}
	return p.Register(ctx, kubeletSocket, endpoint)
}

// Stop stops serving, which ends every ListAndWatch stream, and waits for
// the server to end. It may be called more than once.
func (p *Plugin) Stop() {
	p.mu.Lock()
	srv, done, sock := p.srv, p.done, p.socket
	p.srv = nil
	p.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	<-done
	_ = os.Remove(sock)
}

// SetDevices replaces the devices listed, and sends the new list on every
// open ListAndWatch stream.
func (p *Plugin) SetDevices(devs ...*pluginapi.Device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.devices = cloneDevices(devs)
	close(p.changed)
	p.changed = make(chan struct{})
}

// Break ends every open ListAndWatch stream, and any opened later, with err.
func (p *Plugin) Break(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.broken:
		return
	default:
	}
	p.brkErr = err
	close(p.broken)
}

// Calls returns the names of the methods called so far, in order.
func (p *Plugin) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

func (p *Plugin) call(method string) error {
	p.mu.Lock()
	p.calls = append(p.calls, method)
	fail := p.Fail
	p.mu.Unlock()
	if fail != nil {
		return fail(method)
	}
	return nil
}

// GetDevicePluginOptions implements the device plugin API.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	if err := p.call(GetDevicePluginOptions); err != nil {
		return nil, err
	}
	if p.Options == nil {
		return &pluginapi.DevicePluginOptions{}, nil
	}
	return p.Options, nil
}

// ListAndWatch implements the device plugin API: the devices, then each
// new list, until the stream ends or Break.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := p.call(ListAndWatch); err != nil {
		return err
	}
	for {
		p.mu.Lock()
		resp := &pluginapi.ListAndWatchResponse{Devices: cloneDevices(p.devices)}
		changed, broken := p.changed, p.broken
		p.mu.Unlock()
		if err := stream.Send(resp); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-broken:
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.brkErr
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}

// GetPreferredAllocation implements the device plugin API.
func (p *Plugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	if err := p.call(GetPreferredAllocation); err != nil {
		return nil, err
	}
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, r := range req.GetContainerRequests() {
		var ids []string
		if p.Prefer != nil {
			ids = p.Prefer(r)
		} else {
			ids = append(slices.Clone(r.GetMustIncludeDeviceIDs()), r.GetAvailableDeviceIDs()...)
			ids = slices.Compact(ids)
			ids = ids[:min(len(ids), int(r.GetAllocationSize()))]
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// Allocate implements the device plugin API.
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	if err := p.call(Allocate); err != nil {
		return nil, err
	}
	resp := &pluginapi.AllocateResponse{}
	for _, r := range req.GetContainerRequests() {
		ids := r.GetDevicesIds()
		var c *pluginapi.ContainerAllocateResponse
		if p.Answer != nil {
			c = p.Answer(ids)
		} else {
			c = &pluginapi.ContainerAllocateResponse{Envs: map[string]string{DefaultEnv: strings.Join(ids, ",")}}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, c)
	}
	return resp, nil
}

// PreStartContainer implements the device plugin API.
func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	if err := p.call(PreStartContainer); err != nil {
		return nil, err
	}
	return &pluginapi.PreStartContainerResponse{}, nil
}

// endpoints numbers the sockets StartAndRegister names.
var endpoints atomic.Uint64

var _ pluginapi.DevicePluginServer = (*Plugin)(nil)
