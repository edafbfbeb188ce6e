package devices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

const (
	// SocketName is the registration socket's name in Options.Dir, the
	// name device plugins dial (upstream's kubelet.sock).
	SocketName = "kubelet.sock"
	// CheckpointName is the file in Options.Dir that keeps the allocations
	// and the registered resources across restarts.
	CheckpointName = "kubeletkit_devices_checkpoint"
	// DefaultStopGracePeriod is how long a resource whose plugin went away
	// stays in the node's capacity, its devices unhealthy, before it is
	// reported as zero (upstream's endpointStopGracePeriod).
	DefaultStopGracePeriod = 5 * time.Minute
	// DefaultRPCTimeout bounds each call to a plugin but ListAndWatch.
	// Upstream waits for Allocate without limit; a plugin that hangs here
	// holds up one admission for this long, not the node forever.
	DefaultRPCTimeout = time.Minute
	// preStartTimeout bounds PreStartContainer, as upstream does.
	preStartTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second
	// maxSocketPath is the longest path of a unix socket on Linux.
	maxSocketPath = 107
)

// ReasonUnexpectedAdmissionError is the reason of a pod refused because its
// devices could not be allocated, upstream's UnexpectedAdmissionError.
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// ErrNotRunning is the error of a registration that arrives before Run
// has started or after it has returned.
var ErrNotRunning = errors.New("device manager is not running")

// Options configure a Manager. Dir is required; every other zero value is
// the documented default.
type Options struct {
	// Dir is the device plugin directory: the manager serves SocketName
	// there, resolves the endpoints plugins register in it and keeps its
	// checkpoint there. Upstream's is /var/lib/kubelet/device-plugins
	// (pluginapi.DevicePluginPath), which plugins assume.
	Dir string
	// Clock measures the stop grace period (nil: the real clock).
	Clock clock.PassiveClock
	// Logger receives the manager's logs (nil: discard).
	Logger *slog.Logger
	// StopGracePeriod: DefaultStopGracePeriod when zero.
	StopGracePeriod time.Duration
	// RPCTimeout: DefaultRPCTimeout when zero.
	RPCTimeout time.Duration
	// NUMANodes are the machine's NUMA nodes, over which the manager's
	// topology hints range (ContainerHints); nil: no hints.
	NUMANodes []int
	// Affinity gives the NUMA nodes the topology manager chose for each
	// container (topologymanager.Manager): Allocate takes the container's
	// devices from them first. nil: no preference.
	Affinity topologymanager.Store
	// OnChange is called, without locks held, when a resource's capacity or
	// allocatable may have changed: a plugin registered, listed its devices
	// or went away. The agent syncs the node's status on it. Nil: none.
	OnChange func()
}

// Manager is a kubelet's device manager: it serves the device plugin
// registration API, follows each registered plugin's devices and their
// health, allocates devices to the containers that ask for them, and adds
// what the plugins answer to those containers' CRI configs. Its methods are
// safe for concurrent use.
type Manager struct {
	o     Options
	clock clock.PassiveClock
	log   *slog.Logger

	// admitMu serializes Admit, Prepare and Allocate: device choices and
	// the RPCs that confirm them happen without mu held.
	admitMu sync.Mutex

	mu        sync.Mutex
	resources map[string]*resourceState
	// deleted are resources whose plugin stayed away past the grace
	// period: reported with zero capacity until a plugin registers them
	// again and lists its devices (or goes away again).
	deleted map[string]struct{}
	pods    podDevices
	// reuse are the devices of reusePod's regular init containers, which
	// its later containers take first (upstream's devicesToReuse).
	reusePod types.UID
	reuse    map[string]map[string]struct{}
	// lastHealth is each device's health as its plugin last listed it,
	// kept when the plugin goes away and when its resource is dropped, for
	// the containers' allocatedResourcesStatus (upstream's allDevices).
	lastHealth map[string]map[string]bool
	// healthChanged are pods holding a device whose listed health
	// changed, whose status is due again (TakeHealthChanges).
	healthChanged map[types.UID]struct{}
	// runCtx is Run's context while it serves; nil otherwise.
	runCtx   context.Context
	listener net.Listener
	loaded   bool
	wg       sync.WaitGroup
}

// resourceState is one extended resource and the plugin that serves it.
type resourceState struct {
	ep *endpoint // nil for a resource restored from the checkpoint
	// stoppedAt is when the plugin went away (zero while it streams);
	// from then on none of its devices is allocatable.
	stoppedAt time.Time
	// listed: the resource is reported (devices listed once, or the plugin
	// went away).
	listed bool
	// health of each device, by ID, as last listed: true when Healthy.
	health map[string]bool
	// numa are the NUMA nodes each device is attached to, as its plugin
	// last listed them (Device.Topology); a device without any has none.
	numa map[string][]int
}

// healthy reports whether device id can be allocated (mu held).
func (r *resourceState) healthy(id string) bool {
	return r.stoppedAt.IsZero() && r.health[id]
}

// endpoint is one registered plugin's connection.
type endpoint struct {
	resource string
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	options  *pluginapi.DevicePluginOptions
	cancel   context.CancelFunc
}

// New returns a Manager. It touches no disk and starts nothing; Listen and
// Run do.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, errors.New("devices: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	opts.Dir = dir
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StopGracePeriod == 0 {
		opts.StopGracePeriod = DefaultStopGracePeriod
	}
	if opts.RPCTimeout == 0 {
		opts.RPCTimeout = DefaultRPCTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{o: opts, clock: opts.Clock, log: log, resources: map[string]*resourceState{},
		deleted: map[string]struct{}{}, pods: podDevices{}, lastHealth: map[string]map[string]bool{},
		healthChanged: map[types.UID]struct{}{}}, nil
}

// SocketPath is where the manager serves the registration API.
func (m *Manager) SocketPath() string { return filepath.Join(m.o.Dir, SocketName) }

// Listen restores the checkpoint, removes stale sockets from Dir (a signal
// to running plugins that they must register again, as upstream gives it)
// and listens on SocketPath. Run calls it when it has not been called; a
// caller that must not admit pods before the allocations of running ones
// are known calls it first.
func (m *Manager) Listen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listener != nil {
		return nil
	}
	if err := os.MkdirAll(m.o.Dir, 0o750); err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	if !m.loaded {
		m.restore()
		m.loaded = true
	}
	if len(m.SocketPath()) > maxSocketPath {
		return fmt.Errorf("devices: socket path %s is longer than the %d bytes a unix socket's path may have", m.SocketPath(), maxSocketPath)
	}
	m.removeStaleSockets()
	l, err := net.Listen("unix", m.SocketPath())
	if err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	m.listener = l
	return nil
}

func (m *Manager) removeStaleSockets() {
	entries, err := os.ReadDir(m.o.Dir)
	if err != nil {
		m.log.Warn("Cannot read the device plugin directory", "dir", m.o.Dir, "err", err)
		return
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		p := filepath.Join(m.o.Dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Warn("Cannot remove a stale socket", "path", p, "err", err)
		}
	}
}

func dialPlugin(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// Run serves registrations until ctx ends, then stops following every
// plugin and returns once every goroutine it started has ended. It may be
// called once.
func (m *Manager) Run(ctx context.Context) error {
	if err := m.Listen(); err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, registration{m: m})
	m.mu.Lock()
	m.runCtx = ctx
	l := m.listener
	m.mu.Unlock()
	m.log.Info("Serving device plugin registrations", "socket", m.SocketPath())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("devices: serve %s: %w", m.SocketPath(), err)
	}
	srv.Stop()
	if err == nil {
		<-served
	}
	m.mu.Lock()
	m.runCtx = nil
	m.listener = nil
	eps := make([]*endpoint, 0, len(m.resources))
	for _, r := range m.resources {
		if r.ep != nil {
			eps = append(eps, r.ep)
		}
	}
	m.mu.Unlock()
	for _, ep := range eps {
		ep.cancel()
	}
	m.wg.Wait() // each stream's reader closes its connection
	if rmErr := os.Remove(m.SocketPath()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		m.log.Warn("Cannot remove the registration socket", "err", rmErr)
	}
	return err
}

// registration serves the Registration API.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	m *Manager
}

func (r registration) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if err := r.m.register(ctx, req); err != nil {
		r.m.log.Warn("Device plugin registration refused", "resource", req.GetResourceName(), "endpoint", req.GetEndpoint(), "err", err)
		return &pluginapi.Empty{}, err
	}
	return &pluginapi.Empty{}, nil
}

// ValidateRegistration checks a registration request as upstream does: a
// supported API version and an extended resource name; and, beyond
// upstream, an endpoint that names a file of the plugin directory, never a
// path out of it.
func ValidateRegistration(req *pluginapi.RegisterRequest) error {
	supported := false
	for _, v := range pluginapi.SupportedVersions {
		supported = supported || v == req.GetVersion()
	}
	if !supported {
		return fmt.Errorf("requested API version %q is not supported by kubelet. Supported versions are %q",
			req.GetVersion(), pluginapi.SupportedVersions)
	}
	if !IsExtendedResourceName(v1.ResourceName(req.GetResourceName())) {
		return fmt.Errorf("the ResourceName %q is invalid", req.GetResourceName())
	}
	ep := req.GetEndpoint()
	if ep == "" || ep == "." || ep == ".." || strings.ContainsAny(ep, `/\`) || strings.ContainsRune(ep, 0) {
		return fmt.Errorf("the Endpoint %q is invalid: it must name a socket in the device plugin directory", ep)
	}
	return nil
}

// IsExtendedResourceName reports whether name is an extended resource: a
// qualified name outside the kubernetes.io domain, not requests.-prefixed,
// as the API server's validation defines it.
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	if domain, _, _ := strings.Cut(s, "/"); domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

func (m *Manager) register(ctx context.Context, req *pluginapi.RegisterRequest) error {
	if err := ValidateRegistration(req); err != nil {
		return err
	}
	m.mu.Lock()
	runCtx := m.runCtx
	m.mu.Unlock()
	if runCtx == nil {
		return ErrNotRunning
	}
	name := req.GetResourceName()
	conn, err := dialPlugin(filepath.Join(m.o.Dir, req.GetEndpoint()))
	if err != nil {
		return fmt.Errorf("failed to dial device plugin: %w", err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	callCtx, cancel := context.WithTimeout(ctx, m.o.RPCTimeout)
	options, err := client.GetDevicePluginOptions(callCtx, &pluginapi.Empty{})
	cancel()
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("failed to get device plugin options: %v", err)
	}
	streamCtx, stop := context.WithCancel(runCtx)
	ep := &endpoint{resource: name, conn: conn, client: client, options: options, cancel: stop}

	m.mu.Lock()
	if m.runCtx == nil {
		m.mu.Unlock()
		stop()
		_ = conn.Close()
		return ErrNotRunning
	}
	r := m.resources[name]
	if r == nil {
		r = &resourceState{health: map[string]bool{}}
		m.resources[name] = r
	}
	old := r.ep
	r.ep, r.stoppedAt = ep, time.Time{}
	m.wg.Add(1)
	m.mu.Unlock()
	if old != nil {
		old.cancel()
	}
	m.log.Info("Device plugin registered", "resource", name, "endpoint", req.GetEndpoint(),
		"preStartRequired", options.GetPreStartRequired(), "preferredAllocation", options.GetGetPreferredAllocationAvailable())
	go func() {
		defer m.wg.Done()
		m.follow(streamCtx, ep)
	}()
	return nil
}

// follow reads a plugin's ListAndWatch stream until it ends, then closes
// the plugin's connection. A stream that fails, at once or later, is not
// opened again: the plugin must register anew, as upstream requires.
func (m *Manager) follow(ctx context.Context, ep *endpoint) {
	defer ep.conn.Close()
	stream, err := ep.client.ListAndWatch(ctx, &pluginapi.Empty{})
	for err == nil {
		var resp *pluginapi.ListAndWatchResponse
		if resp, err = stream.Recv(); err == nil {
			m.setDevices(ep, resp.GetDevices())
		}
	}
	if ctx.Err() != nil {
		return // replaced by a new registration, or the manager stops
	}
	m.log.Warn("Device plugin went away: its devices are unhealthy", "resource", ep.resource, "err", err)
	m.disconnected(ep)
}

func (m *Manager) setDevices(ep *endpoint, devs []*pluginapi.Device) {
	m.mu.Lock()
	r := m.resources[ep.resource]
	if r == nil || r.ep != ep {
		m.mu.Unlock()
		return
	}
	r.health = make(map[string]bool, len(devs))
	r.numa = make(map[string][]int, len(devs))
	for _, d := range devs {
		r.health[d.GetID()] = d.GetHealth() == pluginapi.Healthy
		for _, n := range d.GetTopology().GetNodes() {
			r.numa[d.GetID()] = append(r.numa[d.GetID()], int(n.GetID()))
		}
	}
	last := m.lastHealth[ep.resource]
	for id, ok := range r.health {
		if was, known := last[id]; !known || was != ok {
			m.pods.holders(ep.resource, id, m.healthChanged)
		}
	}
	m.lastHealth[ep.resource] = maps.Clone(r.health)
	r.listed = true
	delete(m.deleted, ep.resource)
	m.checkpointLocked()
	m.mu.Unlock()
	m.changed()
}

func (m *Manager) disconnected(ep *endpoint) {
	m.mu.Lock()
	r := m.resources[ep.resource]
	if r == nil || r.ep != ep {
		m.mu.Unlock()
		return
	}
	r.listed = true
	delete(m.deleted, ep.resource)
	r.stoppedAt = m.clock.Now()
	m.mu.Unlock()
	m.changed()
}

func (m *Manager) changed() {
	if m.o.OnChange != nil {
		m.o.OnChange()
	}
}

// Resources returns the device plugin resources for the node's status:
// each one's capacity (all its devices) and allocatable (the healthy
// ones). A resource whose plugin went away more than the stop grace period
// ago is dropped and reported with zero of both from then on, as upstream
// zeroes a removed resource in the Node.
func (m *Manager) Resources() (capacity, allocatable v1.ResourceList) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	capacity, allocatable = v1.ResourceList{}, v1.ResourceList{}
	expired := false
	for name, r := range m.resources {
		if !r.stoppedAt.IsZero() && now.Sub(r.stoppedAt) >= m.o.StopGracePeriod {
			delete(m.resources, name)
			m.deleted[name] = struct{}{}
			expired = true
			m.log.Info("Device plugin resource removed after its grace period", "resource", name)
			continue
		}
		if !r.listed {
			continue
		}
		healthy := 0
		for id := range r.health {
			if r.healthy(id) {
				healthy++
			}
		}
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(int64(len(r.health)), resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(int64(healthy), resource.DecimalSI)
	}
	for name := range m.deleted {
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	if expired {
		m.checkpointLocked()
	}
	return capacity, allocatable
}

// isDeviceResource reports whether a container's limit of name is the
// device manager's to allocate: a registered resource, or one that some
// pod holds devices of (mu held).
func (m *Manager) isDeviceResource(name string) bool {
	if _, ok := m.resources[name]; ok {
		return true
	}
	return m.pods.holds(name)
}

// sortedNames returns a resource list's names, sorted.
func sortedNames(l v1.ResourceList) []string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	return names
}

// activeUIDs is the set of pods whose devices stay allocated.
func activeUIDs(pod *v1.Pod, others []*v1.Pod) map[types.UID]struct{} {
	active := make(map[types.UID]struct{}, len(others)+1)
	active[pod.UID] = struct{}{}
	for _, p := range others {
		active[p.UID] = struct{}{}
	}
	return active
}
