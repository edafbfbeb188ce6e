package pluginmanagertest

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Plugin is a fake plugin. Serve starts it; its methods are safe for
// concurrent use.
type Plugin struct {
	registerapi.UnimplementedRegistrationServer

	mu        sync.Mutex
	info      *registerapi.PluginInfo
	statuses  []*registerapi.RegistrationStatus
	infoErr   error
	notifyErr error
	changed   chan struct{}
}

var _ registerapi.RegistrationServer = (*Plugin)(nil)

// New returns a plugin whose GetInfo answers info.
func New(info *registerapi.PluginInfo) *Plugin {
	return &Plugin{info: info, changed: make(chan struct{})}
}

// SetInfoError makes GetInfo fail with err from now on (nil: answer).
func (p *Plugin) SetInfoError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.infoErr = err
}

// SetNotifyError makes NotifyRegistrationStatus fail with err from now
// on, the status still recorded (nil: answer), as the DRA test driver's
// failure mode does.
func (p *Plugin) SetNotifyError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifyErr = err
}

// GetInfo answers the plugin's info.
func (p *Plugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.infoErr != nil {
		return nil, p.infoErr
	}
	return p.info, nil
}

// NotifyRegistrationStatus records what the manager told, and fails
// with SetNotifyError's error if there is one.
func (p *Plugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statuses = append(p.statuses, s)
	close(p.changed)
	p.changed = make(chan struct{})
	if p.notifyErr != nil {
		return nil, p.notifyErr
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Statuses returns what the manager told the plugin, in order.
func (p *Plugin) Statuses() []*registerapi.RegistrationStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*registerapi.RegistrationStatus(nil), p.statuses...)
}

// Notified is closed at the next status the manager tells.
func (p *Plugin) Notified() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Serve serves the Registration service on a unix socket at path (made
// anew: an old file there is removed) until ctx ends; then it stops the
// server, removes the socket and returns nil.
func (p *Plugin) Serve(ctx context.Context, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	return p.ServeListener(ctx, l)
}

// ServeListener serves on l until ctx ends, then stops and returns nil.
func (p *Plugin) ServeListener(ctx context.Context, l net.Listener) error {
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, p)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	select {
	case <-ctx.Done():
		s.Stop()
		<-done
		return nil
	case err := <-done:
		return err
	}
}
