package pluginmanager_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/pluginmanager"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
)

// handler records what the manager asks of it.
type handler struct {
	mu          sync.Mutex
	calls       []string
	validateErr error
	registerErr error
}

func (h *handler) record(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf(format, args...))
}

func (h *handler) ValidatePlugin(name, endpoint string, versions []string) error {
	h.record("validate %s %s %v", name, endpoint, versions)
	return h.validateErr
}

func (h *handler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.record("register %s %s %v", name, endpoint, versions)
	return h.registerErr
}

func (h *handler) DeRegisterPlugin(name, endpoint string) {
	h.record("deregister %s %s", name, endpoint)
}

func (h *handler) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

var _ pluginmanager.Handler = (*handler)(nil)

// harness is a registry directory, a manager on a fake clock with a CSI
// handler, and the plugins served in it.
type harness struct {
	t   *testing.T
	dir string
	clk *clocktesting.FakeClock
	h   *handler
	m   *pluginmanager.Manager
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "pm") // short: a socket path has at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{t: t, dir: dir, clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), h: &handler{}}
	h.m, err = pluginmanager.New(pluginmanager.Options{Dir: dir, Clock: h.clk,
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: h.h}})
	require.NoError(t, err)
	return h
}

// serve serves p at name in the registry until the returned stop is
// called (or the test ends).
func (h *harness) serve(p *pluginmanagertest.Plugin, name string) (path string, stop func()) {
	h.t.Helper()
	path = filepath.Join(h.dir, name)
	require.NoError(h.t, os.MkdirAll(filepath.Dir(path), 0o755))
	l, err := net.Listen("unix", path)
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.ServeListener(ctx, l) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(h.t, <-done)
			_ = os.Remove(path)
		})
	}
	h.t.Cleanup(stop)
	return path, stop
}

func csiInfo(name, endpoint string) *registerapi.PluginInfo {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: name, Endpoint: endpoint, SupportedVersions: []string{"1.0.0"}}
}

func TestRegisterAndDeregister(t *testing.T) {
	h := newHarness(t)
	p := pluginmanagertest.New(csiInfo("csi.example.com", "/var/lib/kubelet/plugins/csi.example.com/csi.sock"))
	path, stop := h.serve(p, "csi.example.com-reg.sock")
	ctx := context.Background()

	h.m.Sync(ctx)
	assert.Equal(t, []string{
		"validate csi.example.com /var/lib/kubelet/plugins/csi.example.com/csi.sock [1.0.0]",
		"register csi.example.com /var/lib/kubelet/plugins/csi.example.com/csi.sock [1.0.0]",
	}, h.h.Calls())
	require.Len(t, p.Statuses(), 1)
	assert.True(t, p.Statuses()[0].PluginRegistered)
	assert.Empty(t, p.Statuses()[0].Error)
	reg := h.m.Registered()
	require.Contains(t, reg, path)
	assert.Equal(t, "csi.example.com", reg[path].Name)

	h.m.Sync(ctx) // nothing changed
	assert.Len(t, h.h.Calls(), 2)

	stop()
	h.m.Sync(ctx)
	assert.Equal(t, "deregister csi.example.com /var/lib/kubelet/plugins/csi.example.com/csi.sock", h.h.Calls()[2])
	assert.Empty(t, h.m.Registered())
}

// A plugin that gives no endpoint is reached at its registration socket.
func TestEndpointDefaultsToTheSocket(t *testing.T) {
	h := newHarness(t)
	p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
	path, _ := h.serve(p, "sub/csi.sock") // in a subdirectory, as upstream finds them
	h.m.Sync(context.Background())
	assert.Equal(t, "register csi.example.com "+path+" [1.0.0]", h.h.Calls()[1])
}

// A restarted plugin makes its socket anew: it is deregistered, then
// registered again.
func TestSocketMadeAnew(t *testing.T) {
	h := newHarness(t)
	p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
	path, stop := h.serve(p, "csi.sock")
	h.m.Sync(context.Background())
	stop()
	p2 := pluginmanagertest.New(csiInfo("csi.example.com", ""))
	h.serve(p2, "csi.sock")
	h.m.Sync(context.Background())
	assert.Equal(t, []string{
		"validate csi.example.com " + path + " [1.0.0]", "register csi.example.com " + path + " [1.0.0]",
		"deregister csi.example.com " + path,
		"validate csi.example.com " + path + " [1.0.0]", "register csi.example.com " + path + " [1.0.0]",
	}, h.h.Calls())
	assert.True(t, p2.Statuses()[0].PluginRegistered)
}

// The refusals: the plugin is told why with upstream's messages and is
// tried again after the back-off, as upstream v1.36's plugin manager
// does: a refusal by the handler's RegisterPlugin too, and a plugin that
// could not be told it was registered is deregistered first.
func TestRefusals(t *testing.T) {
	t.Run("no handler for the type, tried again after the back-off", func(t *testing.T) {
		h := newHarness(t)
		p := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu.example.com"})
		path, _ := h.serve(p, "dra.sock")
		h.m.Sync(context.Background())
		require.Len(t, p.Statuses(), 1)
		assert.False(t, p.Statuses()[0].PluginRegistered)
		assert.Equal(t, "RegisterPlugin error -- no handler registered for plugin type: DRAPlugin at socket "+path, p.Statuses()[0].Error)
		h.m.Sync(context.Background())
		assert.Len(t, p.Statuses(), 1, "in back-off")
		h.clk.Step(500 * time.Millisecond)
		h.m.Sync(context.Background())
		assert.Len(t, p.Statuses(), 2, "tried again")
		h.clk.Step(500 * time.Millisecond)
		h.m.Sync(context.Background())
		assert.Len(t, p.Statuses(), 2, "the back-off doubled to 1s")
		assert.Empty(t, h.m.Registered())
	})
	t.Run("validation failed", func(t *testing.T) {
		h := newHarness(t)
		h.h.validateErr = errors.New("none of the versions specified [0.3.0] are supported")
		p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
		h.serve(p, "csi.sock")
		h.m.Sync(context.Background())
		assert.Equal(t, "RegisterPlugin error -- plugin validation failed with err: none of the versions specified [0.3.0] are supported", p.Statuses()[0].Error)
		assert.Len(t, h.h.Calls(), 1, "not registered")
		assert.Empty(t, h.m.Registered())
	})
	t.Run("registration failed: tried again after the back-off", func(t *testing.T) {
		h := newHarness(t)
		h.h.registerErr = errors.New("NodeGetInfo: unavailable")
		p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
		path, _ := h.serve(p, "csi.sock")
		h.m.Sync(context.Background())
		assert.Equal(t, "RegisterPlugin error -- plugin registration failed with err: NodeGetInfo: unavailable", p.Statuses()[0].Error)
		assert.Empty(t, h.m.Registered())
		h.m.Sync(context.Background())
		assert.Len(t, p.Statuses(), 1, "in back-off")
		h.h.registerErr = nil
		h.clk.Step(500 * time.Millisecond)
		h.m.Sync(context.Background())
		require.Len(t, p.Statuses(), 2)
		assert.True(t, p.Statuses()[1].PluginRegistered)
		assert.Contains(t, h.m.Registered(), path)
	})
	t.Run("the plugin could not be told: deregistered, tried again after the back-off", func(t *testing.T) {
		h := newHarness(t)
		p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
		p.SetNotifyError(errors.New("simulated NotifyRegistrationStatus failure"))
		path, _ := h.serve(p, "csi.sock")
		h.m.Sync(context.Background())
		assert.Equal(t, []string{
			"validate csi.example.com " + path + " [1.0.0]", "register csi.example.com " + path + " [1.0.0]",
			"deregister csi.example.com " + path,
		}, h.h.Calls())
		assert.Empty(t, h.m.Registered())
		p.SetNotifyError(nil)
		h.clk.Step(500 * time.Millisecond)
		h.m.Sync(context.Background())
		require.Len(t, p.Statuses(), 2)
		assert.True(t, p.Statuses()[1].PluginRegistered)
		assert.Contains(t, h.m.Registered(), path)
		assert.Len(t, h.h.Calls(), 5, "validated and registered again")
	})
	t.Run("GetInfo failed: retried", func(t *testing.T) {
		h := newHarness(t)
		p := pluginmanagertest.New(csiInfo("csi.example.com", ""))
		p.SetInfoError(errors.New("not ready"))
		h.serve(p, "csi.sock")
		h.m.Sync(context.Background())
		assert.Empty(t, h.h.Calls())
		p.SetInfoError(nil)
		h.clk.Step(500 * time.Millisecond)
		h.m.Sync(context.Background())
		assert.Len(t, h.h.Calls(), 2)
		assert.True(t, p.Statuses()[0].PluginRegistered)
	})
}

func TestScan(t *testing.T) {
	dir, err := os.MkdirTemp("", "pm")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	var ls []net.Listener
	listen := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		ls = append(ls, l)
		return p
	}
	a := listen("a.sock")
	b := listen("d/b.sock")
	listen(".hidden.sock")
	listen(".d/c.sock")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644))
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	got, err := pluginmanager.Scan(dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{a, b}, keys(got))
	assert.NotEmpty(t, got[a].ID)

	none, err := pluginmanager.Scan(filepath.Join(dir, "missing"))
	require.NoError(t, err)
	assert.Empty(t, none)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNewAndRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts pluginmanager.Options
	}{
		{"no dir", pluginmanager.Options{}},
		{"nil handler", pluginmanager.Options{Dir: "/x", Handlers: map[string]pluginmanager.Handler{"CSIPlugin": nil}}},
		{"negative period", pluginmanager.Options{Dir: "/x", Period: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pluginmanager.New(tc.opts)
			assert.ErrorIs(t, err, pluginmanager.ErrInvalidOptions)
		})
	}
	dir := filepath.Join(t.TempDir(), "plugins_registry")
	m, err := pluginmanager.New(pluginmanager.Options{Dir: dir})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, m.Run(ctx))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm(), "made by Run")
}
