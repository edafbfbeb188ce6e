package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"
)

// Handler is what registers the plugins of one type (a CSI driver
// registry for registerapi.CSIPlugin, a DRA manager for
// registerapi.DRAPlugin), upstream's PluginHandler.
type Handler interface {
	// ValidatePlugin says whether the plugin named name, reached at
	// endpoint, with the API versions it supports, may register; an
	// error refuses it.
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin registers it; ctx bounds what it asks of the plugin.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeRegisterPlugin forgets it: its socket went away, or was made
	// anew by a restarted plugin that will register again.
	DeRegisterPlugin(name, endpoint string)
}

// ErrInvalidOptions is wrapped by New's errors.
var ErrInvalidOptions = errors.New("pluginmanager: invalid options")

// Options configure a Manager.
type Options struct {
	// Dir is the registry directory the plugins put their sockets in
	// (<root-dir>/plugins_registry); required. Run makes it (0750).
	Dir string
	// Handlers are the handlers by plugin type (registerapi.CSIPlugin,
	// registerapi.DRAPlugin); a plugin of another type is refused.
	Handlers map[string]Handler
	// Period is how often the directory is scanned and the plugins
	// reconciled (1s, upstream's reconciler period).
	Period time.Duration
	// Timeout bounds each call: the dial, GetInfo,
	// NotifyRegistrationStatus and the handler's RegisterPlugin (10s).
	Timeout time.Duration
	// Clock drives the period and the back-off (the real clock).
	Clock clock.WithTicker
	// Logger logs registrations and failures (none).
	Logger *slog.Logger
}

// Manager finds the plugins' sockets and registers them with their
// handlers. Build it with New and start it with Run.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu         sync.Mutex
	registered map[string]Registered
	backoff    map[string]Backoff
}

// New validates opts and returns a Manager; it starts nothing.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: Dir is required", ErrInvalidOptions)
	}
	for typ, h := range opts.Handlers {
		if h == nil {
			return nil, fmt.Errorf("%w: the handler of %q is nil", ErrInvalidOptions, typ)
		}
	}
	if opts.Period < 0 || opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: Period and Timeout may not be negative", ErrInvalidOptions)
	}
	if opts.Period == 0 {
		opts.Period = time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, log: log, registered: map[string]Registered{}, backoff: map[string]Backoff{}}, nil
}

// Run makes the directory and reconciles every Period until ctx ends;
// then it returns nil, the plugins left registered (upstream's kubelet
// does not deregister its plugins as it stops).
func (m *Manager) Run(ctx context.Context) error {
	if err := os.MkdirAll(m.opts.Dir, 0o750); err != nil {
		return fmt.Errorf("pluginmanager: %w", err)
	}
	t := m.opts.Clock.NewTicker(m.opts.Period)
	defer t.Stop()
	for {
		m.Sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Sync scans the directory once and carries out what Reconcile decides.
func (m *Manager) Sync(ctx context.Context) {
	present, err := Scan(m.opts.Dir)
	if err != nil {
		m.log.Error("Failed to scan the plugin registry", "err", err)
		return
	}
	m.mu.Lock()
	actions := Reconcile(present, m.registered, m.backoff, m.opts.Clock.Now())
	m.mu.Unlock()
	for _, a := range actions {
		if ctx.Err() != nil {
			return
		}
		switch a.Kind {
		case Deregister:
			m.deregister(a.Plugin)
		case Register:
			m.register(ctx, a.Socket)
		}
	}
}

// Registered returns the plugins registered, by socket path.
func (m *Manager) Registered() map[string]Registered {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Registered, len(m.registered))
	for k, v := range m.registered {
		out[k] = v
	}
	return out
}

func (m *Manager) deregister(p Registered) {
	m.mu.Lock()
	delete(m.registered, p.Path)
	m.mu.Unlock()
	if h := m.opts.Handlers[p.Type]; h != nil {
		h.DeRegisterPlugin(p.Name, p.Endpoint)
	}
	m.log.Info("Deregistered plugin", "type", p.Type, "name", p.Name, "socket", p.Path)
}

// register runs one registration of s, as upstream's operation
// generator does, and records its outcome: the plugin registered, or the
// socket's back-off grown.
func (m *Manager) register(ctx context.Context, s Socket) {
	p, err := m.registerOnce(ctx, s)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.backoff[s.Path] = Failed(m.backoff[s.Path], s, m.opts.Clock.Now())
		m.log.Error("Failed to register plugin", "socket", s.Path, "err", err)
		return
	}
	delete(m.backoff, s.Path)
	m.registered[s.Path] = p
	m.log.Info("Registered plugin", "type", p.Type, "name", p.Name, "endpoint", p.Endpoint, "socket", s.Path)
}

func (m *Manager) registerOnce(ctx context.Context, s Socket) (Registered, error) {
	conn, err := grpc.NewClient("passthrough:///"+s.Path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.Path)
		}))
	if err != nil {
		return Registered{}, fmt.Errorf("RegisterPlugin error -- dial failed at socket %s, err: %w", s.Path, err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	callCtx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	info, err := client.GetInfo(callCtx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return Registered{}, fmt.Errorf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %w", s.Path, err)
	}
	h, ok := m.opts.Handlers[info.GetType()]
	if !ok {
		return Registered{}, m.notify(ctx, client, s, fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.GetType(), s.Path))
	}
	endpoint := info.GetEndpoint()
	if endpoint == "" {
		endpoint = s.Path
	}
	versions := info.GetSupportedVersions()
	if err := h.ValidatePlugin(info.GetName(), endpoint, versions); err != nil {
		return Registered{}, m.notify(ctx, client, s, fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err))
	}
	p := Registered{Socket: s, Type: info.GetType(), Name: info.GetName(), Endpoint: endpoint}
	regCtx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	err = h.RegisterPlugin(regCtx, info.GetName(), endpoint, versions)
	cancel()
	if err != nil {
		// As upstream's, a plugin its handler refused is not registered:
		// it is told so and asked again after the socket's back-off.
		return Registered{}, m.notify(ctx, client, s, fmt.Sprintf("RegisterPlugin error -- plugin registration failed with err: %v", err))
	}
	if err := m.notify(ctx, client, s, ""); err != nil {
		// A plugin that could not be told is not registered either: its
		// handler forgets it, and it is asked again after the back-off
		// (upstream since 1.34).
		h.DeRegisterPlugin(info.GetName(), endpoint)
		return Registered{}, err
	}
	return p, nil
}

// notify tells the plugin the outcome: registered when msg is empty,
// else refused with msg, which is then the error returned.
func (m *Manager) notify(ctx context.Context, client registerapi.RegistrationClient, s Socket, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: msg == "", Error: msg})
	switch {
	case err != nil && msg != "":
		return fmt.Errorf("%s: %w", msg, err)
	case err != nil:
		return fmt.Errorf("RegisterPlugin error -- failed to send registration status at socket %s, err: %w", s.Path, err)
	case msg != "":
		return errors.New(msg)
	}
	return nil
}
