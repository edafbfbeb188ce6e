package dra_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

// handler is package pluginmanager's Handler, which the Registry is for
// plugin type DRAPlugin (the block is not imported: it imports nothing of
// ours, nor we of it).
type handler interface {
	ValidatePlugin(name, endpoint string, versions []string) error
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	DeRegisterPlugin(name, endpoint string)
}

var _ handler = (*dra.Registry)(nil)

// Upstream's checks of a DRA plugin's supported services
// (dra_plugin_manager.go validateSupportedServices).
func TestValidatePlugin(t *testing.T) {
	m, err := dra.New(dra.Options{})
	require.NoError(t, err)
	r := m.Registry()
	for _, tc := range []struct {
		name     string
		versions []string
		want     string
	}{
		{"v1", []string{drav1.DRAPluginService}, ""},
		{"v1beta1", []string{drav1beta1.DRAPluginService}, ""},
		{"both, and an unknown one", []string{"v2.DRAPlugin", drav1beta1.DRAPluginService, drav1.DRAPluginService}, ""},
		{"none", nil,
			"invalid supported gRPC versions of DRA driver plugin gpu.example.com at endpoint /p.sock: empty list of supported gRPC services (aka supported versions)"},
		{"none known", []string{"1.0.0", "v1alpha4.Node"},
			`invalid supported gRPC versions of DRA driver plugin gpu.example.com at endpoint /p.sock: none of services supported by the plugin (["1.0.0" "v1alpha4.Node"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.ValidatePlugin("gpu.example.com", "/p.sock", tc.versions)
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.want)
			}
		})
	}
}

func TestRegisterAndDeregister(t *testing.T) {
	m, err := dra.New(dra.Options{})
	require.NoError(t, err)
	r := m.Registry()
	t.Cleanup(r.Close)
	ctx := context.Background()
	dir := dratest.SocketDir(t)
	a, b := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")

	assert.Error(t, r.RegisterPlugin(ctx, "gpu.example.com", a, []string{"v9.DRAPlugin"}), "validated again")
	require.NoError(t, r.RegisterPlugin(ctx, "gpu.example.com", a, dra.Services))
	assert.EqualError(t, r.RegisterPlugin(ctx, "gpu.example.com", a, dra.Services),
		"endpoint "+a+" already registered for DRA driver plugin gpu.example.com")
	require.NoError(t, r.RegisterPlugin(ctx, "gpu.example.com", b, dra.Services), "a second plugin of the driver (a rolling update)")
	assert.Equal(t, []string{"gpu.example.com"}, r.Drivers())

	r.DeRegisterPlugin("gpu.example.com", a)
	assert.Equal(t, []string{"gpu.example.com"}, r.Drivers(), "the other plugin still serves it")
	r.DeRegisterPlugin("gpu.example.com", "/elsewhere.sock") // unknown: nothing
	r.DeRegisterPlugin("gpu.example.com", b)
	assert.Empty(t, r.Drivers())
}

// A registered driver's plugin is called; once it has gone, its claims
// fail again with "not registered".
func TestPrepareNeedsARegisteredPlugin(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	m := newManager(t, "", apiClaims(claim("gpu", "gpu.example.com")))
	pod := podWith(byName("pc", "gpu"))
	ctx := context.Background()
	require.NoError(t, m.Registry().RegisterPlugin(ctx, p.Driver(), p.Endpoint(), p.Services()))
	require.NoError(t, m.PrepareResources(ctx, pod))
	require.NoError(t, m.UnprepareResources(ctx, pod))

	m.Registry().DeRegisterPlugin(p.Driver(), p.Endpoint())
	err := m.PrepareResources(ctx, pod)
	assert.EqualError(t, err, "prepare dynamic resources: DRA driver gpu.example.com is not registered")
	assert.ErrorIs(t, err, dra.ErrDriverNotRegistered)
	assert.Len(t, p.Calls(), 2)
}

func startPlugin(t *testing.T, driver string, services []string) *dratest.Plugin {
	t.Helper()
	p, err := dratest.Start(dratest.Options{Driver: driver, Endpoint: filepath.Join(dratest.SocketDir(t), "dra.sock"), Services: services})
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p
}

func newManager(t *testing.T, stateDir string, claims dra.Claims) *dra.Manager {
	t.Helper()
	m, err := dra.New(dra.Options{Claims: claims, StateDir: stateDir})
	require.NoError(t, err)
	t.Cleanup(m.Registry().Close)
	return m
}

func register(t *testing.T, m *dra.Manager, plugins ...*dratest.Plugin) {
	t.Helper()
	for _, p := range plugins {
		require.NoError(t, m.Registry().RegisterPlugin(context.Background(), p.Driver(), p.Endpoint(), p.Services()))
	}
}
