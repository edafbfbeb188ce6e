package credentialprovider_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

var _ podsync.Credentials = (*credentialprovider.Providers)(nil)

// fixture is the test plugin configured as one provider, with a file
// counting its runs.
type fixture struct {
	p     *credentialprovider.Providers
	clock *clocktesting.FakePassiveClock
	runs  string
}

func newFixture(t *testing.T, defaultCache time.Duration, env ...kubeletconfigv1.ExecEnvVar) *fixture {
	t.Helper()
	return newTokenFixture(t, defaultCache, nil, nil, env...)
}

// newTokenFixture is newFixture with the provider's tokenAttributes and
// the service accounts (nil for neither).
func newTokenFixture(t *testing.T, defaultCache time.Duration, ta *kubeletconfigv1.ServiceAccountTokenAttributes,
	sas credentialprovider.ServiceAccounts, env ...kubeletconfigv1.ExecEnvVar) *fixture {
	t.Helper()
	f := &fixture{clock: clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0)), runs: filepath.Join(t.TempDir(), "runs")}
	env = append(env, kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_RUNS", Value: f.runs})
	cfg := &kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{{
		Name: "fake-provider", MatchImages: []string{"*.registry.example", "registry.example:5000/team"},
		DefaultCacheDuration: &metav1.Duration{Duration: defaultCache}, APIVersion: "credentialprovider.kubelet.k8s.io/v1", Env: env,
		TokenAttributes: ta,
	}}}
	var err error
	f.p, err = credentialprovider.New(credentialprovider.Options{Config: cfg, BinDir: pluginDir, Clock: f.clock, ServiceAccounts: sas})
	require.NoError(t, err)
	return f
}

// ran returns the images the plugin was run for, in order.
func (f *fixture) ran(t *testing.T) []string {
	data, err := os.ReadFile(f.runs)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

func TestCredentialsFromThePlugin(t *testing.T) {
	f := newFixture(t, time.Hour)
	got := f.p.Credentials(t.Context(), nil, "eu.registry.example/team/app:1.0")
	assert.Equal(t, []*runtimeapi.AuthConfig{{Username: "user-for-eu.registry.example/team/app", Password: "secret"}}, got)
	assert.Empty(t, f.p.Credentials(t.Context(), nil, "docker.io/library/busybox:1.36"), "an image no matchImages covers")
	assert.Empty(t, f.p.Credentials(t.Context(), nil, "registry.example/team/app"), "one domain label fewer than the glob")
	assert.Empty(t, f.p.Credentials(t.Context(), nil, "registry.example:5000/team/app"),
		"matched by matchImages, but the plugin's answer covers *.registry.example only")
	assert.Equal(t, []string{"eu.registry.example/team/app", "registry.example:5000/team/app"}, f.ran(t))
}

func TestCredentialsCache(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keyType  string
		duration string // the answer's cacheDuration; "" leaves the default (1h)
		// images asked for in turn, at 0, 30m, 30m and 2h: those the plugin ran for
		want []string
	}{
		{"image key", "Image", "", []string{"a.registry.example/x", "a.registry.example/y", "b.registry.example/z", "a.registry.example/x"}},
		{"registry key", "Registry", "", []string{"a.registry.example/x", "b.registry.example/z", "a.registry.example/x"}},
		{"global key", "Global", "", []string{"a.registry.example/x", "a.registry.example/x"}},
		{"zero duration: not cached", "Global", "0s", []string{"a.registry.example/x", "a.registry.example/x", "a.registry.example/y", "b.registry.example/z", "a.registry.example/x"}},
		{"answer's duration over the default", "Global", "3h", []string{"a.registry.example/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []kubeletconfigv1.ExecEnvVar{{Name: "PLUGIN_CACHE_KEY_TYPE", Value: tc.keyType}}
			if tc.duration != "" {
				env = append(env, kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_CACHE_DURATION", Value: tc.duration})
			}
			f := newFixture(t, time.Hour, env...)
			ask := func(image string) {
				require.NotEmpty(t, f.p.Credentials(t.Context(), nil, image), image)
			}
			ask("a.registry.example/x")
			f.clock.SetTime(f.clock.Now().Add(30 * time.Minute))
			ask("a.registry.example/x")
			ask("a.registry.example/y")
			ask("b.registry.example/z")
			f.clock.SetTime(f.clock.Now().Add(90 * time.Minute))
			ask("a.registry.example/x")
			assert.Equal(t, tc.want, f.ran(t))
		})
	}
}

// Pods pulling one image at once share one run of the plugin.
func TestConcurrentAsksShareARun(t *testing.T) {
	f := newFixture(t, time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { assert.Len(t, f.p.Credentials(context.Background(), nil, "a.registry.example/x:1"), 1) })
	}
	wg.Wait()
	assert.Len(t, f.ran(t), 1)
}

// A plugin that fails or answers badly gives nothing, and nothing is
// cached: the next pull asks again.
func TestBadPluginsGiveNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  kubeletconfigv1.ExecEnvVar
	}{
		{"exits 1", kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_FAIL", Value: "1"}},
		{"another apiVersion", kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_API_VERSION", Value: "credentialprovider.kubelet.k8s.io/v1beta1"}},
		{"bad cache key type", kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_CACHE_KEY_TYPE", Value: "Pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, time.Hour, tc.env)
			assert.Empty(t, f.p.Credentials(t.Context(), nil, "a.registry.example/x"))
			assert.Empty(t, f.p.Credentials(t.Context(), nil, "a.registry.example/x"))
			assert.Len(t, f.ran(t), 2)
		})
	}
}

func TestNewChecksThePlugins(t *testing.T) {
	cfg := &kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{{
		Name: "missing", MatchImages: []string{"x.io"}, DefaultCacheDuration: &metav1.Duration{}, APIVersion: "credentialprovider.kubelet.k8s.io/v1"}}}
	_, err := credentialprovider.New(credentialprovider.Options{Config: cfg, BinDir: pluginDir})
	assert.ErrorIs(t, err, credentialprovider.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "plugin binary executable "+filepath.Join(pluginDir, "missing")+" did not exist")
	_, err = credentialprovider.New(credentialprovider.Options{BinDir: pluginDir})
	assert.ErrorIs(t, err, credentialprovider.ErrInvalidOptions)
	_, err = credentialprovider.New(credentialprovider.Options{Config: cfg})
	assert.ErrorIs(t, err, credentialprovider.ErrInvalidOptions)
}

// BenchmarkCredentialsCached is a pull's lookup once the plugin's answer
// is cached: no plugin run, the matching and the keyring only.
func BenchmarkCredentialsCached(b *testing.B) {
	runs := filepath.Join(b.TempDir(), "runs")
	cfg := &kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{{
		Name: "fake-provider", MatchImages: []string{"*.registry.example"},
		DefaultCacheDuration: &metav1.Duration{Duration: time.Hour}, APIVersion: "credentialprovider.kubelet.k8s.io/v1",
		Env: []kubeletconfigv1.ExecEnvVar{{Name: "PLUGIN_RUNS", Value: runs}, {Name: "PLUGIN_CACHE_KEY_TYPE", Value: "Registry"}},
	}}}
	p, err := credentialprovider.New(credentialprovider.Options{Config: cfg, BinDir: pluginDir,
		Clock: clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))})
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Credentials(context.Background(), nil, "eu.registry.example/team/app:1")) != 1 {
		b.Fatal("no credentials from the plugin")
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(p.Credentials(context.Background(), nil, "eu.registry.example/team/other:2")) != 1 {
			b.Fatal("no cached credentials")
		}
	}
	if data, err := os.ReadFile(runs); err != nil || strings.Count(string(data), "\n") != 1 {
		b.Fatalf("the plugin ran %q times (%v), want once", data, err)
	}
}

// Load takes upstream's two flags: neither, or both.
func TestLoad(t *testing.T) {
	config := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(config, []byte(header+`providers:
- {name: fake-provider, matchImages: ["*.registry.example"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}
`), 0o600))
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name, config, binDir string
		err                  string // "": no error
		invalid              bool   // the error wraps ErrInvalidOptions
	}{
		{name: "neither"},
		{name: "both", config: config, binDir: pluginDir},
		{name: "config only", config: config, err: `plugin binary directory "" did not exist`, invalid: true},
		{name: "bin dir only", binDir: pluginDir, err: "credential provider config path is empty", invalid: true},
		{name: "no such bin dir", config: config, binDir: missing, err: "plugin binary directory " + missing + " did not exist", invalid: true},
		{name: "no such config", config: missing, binDir: pluginDir, err: "no such file or directory"},
		{name: "plugin not in the bin dir", config: config, binDir: t.TempDir(), err: "plugin binary executable", invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := credentialprovider.Load(tc.config, credentialprovider.Options{BinDir: tc.binDir})
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.config == "", p == nil, "providers only with a configuration")
				return
			}
			require.Error(t, err)
			assert.Nil(t, p)
			assert.Contains(t, err.Error(), tc.err)
			assert.Equal(t, tc.invalid, errors.Is(err, credentialprovider.ErrInvalidOptions))
		})
	}
}
