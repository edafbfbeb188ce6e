package credentialprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ErrInvalidOptions is wrapped by New's errors for options it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// ErrNoServiceAccounts is wrapped, with ErrInvalidOptions, by New's error
// for a provider with tokenAttributes when Options.ServiceAccounts is nil:
// a node without an API server cannot give plugins service account tokens.
var ErrNoServiceAccounts = errors.New("service account tokens for credential provider plugins are not supported by this node: no Options.ServiceAccounts")

// ServiceAccounts is the API server as a provider with tokenAttributes
// needs it: upstream kubelet's service account getter and TokenRequest.
// The node authorizer allows a node both for the service accounts of the
// pods bound to it. client-go's CoreV1().ServiceAccounts(namespace).Get
// and CreateToken do each; GetServiceAccountToken is volume.TokenSource's
// method, so that a volume token source serves here too. Providers keep a
// pod's token until 80% of its lifetime has passed, as upstream's token
// manager. It must be safe for concurrent use.
type ServiceAccounts interface {
	// GetServiceAccount returns the service account namespace/name.
	GetServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
	// GetServiceAccountToken creates a token for the service account
	// namespace/name (a TokenRequest bound to a pod, whose metadata.uid
	// is the service account's).
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// execTimeout bounds one run of a plugin.
const execTimeout = time.Minute

// Options configures Providers.
type Options struct {
	// Config is the providers' configuration (LoadConfig). Required.
	Config *kubeletconfigv1.CredentialProviderConfig
	// BinDir holds the plugins' executables, each named as its provider
	// (upstream's --image-credential-provider-bin-dir). Required.
	BinDir string
	// Clock times the cache. Nil means the real clock.
	Clock clock.PassiveClock
	// Logger gets a line for each plugin that fails. Nil discards.
	Logger *slog.Logger
	// ServiceAccounts gives the providers with tokenAttributes the pod's
	// service account and a token bound to the pod. Nil: a provider with
	// tokenAttributes is an error (ErrNoServiceAccounts).
	ServiceAccounts ServiceAccounts
}

// Providers are the configured credential provider plugins.
type Providers struct {
	plugins []*plugin
	log     *slog.Logger
}

// plugin is one provider: its executable and its cache.
type plugin struct {
	cfg   kubeletconfigv1.CredentialProvider
	path  string
	clock clock.PassiveClock
	sa    ServiceAccounts // set when cfg.TokenAttributes is
	// tokens are the pods' tokens, kept as upstream's token manager does.
	tokens tokenCache

	mu       sync.Mutex
	cache    map[string]cached // by cacheKeys
	inflight map[string]*run   // by image, and service account key and token hash
}

// cached is a plugin's answer kept until expires.
type cached struct {
	auth    map[string]credentialproviderv1.AuthConfig
	expires time.Time
}

// run is one plugin run that several asks for one image wait for.
type run struct {
	done chan struct{}
	auth map[string]credentialproviderv1.AuthConfig
}

// New checks the options (a missing configuration or plugin executable is
// an error wrapping ErrInvalidOptions, as upstream refuses to start; a
// provider with tokenAttributes without Options.ServiceAccounts, one
// wrapping ErrNoServiceAccounts too) and returns the providers. It starts
// nothing.
func New(opts Options) (*Providers, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("image credential providers: no Config: %w", ErrInvalidOptions)
	}
	if opts.BinDir == "" {
		return nil, fmt.Errorf("image credential providers: no BinDir: %w", ErrInvalidOptions)
	}
	if errs := validate(opts.Config); len(errs) > 0 {
		return nil, fmt.Errorf("image credential providers: %w: %w", errs.ToAggregate(), ErrInvalidOptions)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Providers{log: log}
	for i, c := range opts.Config.Providers {
		if c.TokenAttributes != nil && opts.ServiceAccounts == nil {
			return nil, fmt.Errorf("image credential providers: providers[%d].tokenAttributes: %w: %w", i, ErrNoServiceAccounts, ErrInvalidOptions)
		}
		path := filepath.Join(opts.BinDir, c.Name)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("image credential providers: plugin binary executable %s did not exist: %w", path, ErrInvalidOptions)
		}
		pl := &plugin{cfg: c, path: path, clock: clk, cache: map[string]cached{}, inflight: map[string]*run{}}
		if c.TokenAttributes != nil {
			pl.sa = opts.ServiceAccounts
		}
		p.plugins = append(p.plugins, pl)
	}
	return p, nil
}

// Load is upstream kubelet's start with --image-credential-provider-config
// (configPath, a file or a directory: LoadConfig) and
// --image-credential-provider-bin-dir (opts.BinDir): with neither, there
// are no providers and no error (nil, nil); with either, both are needed:
// the binary directory must exist, the configuration be read and valid,
// and every plugin be in the directory (New, with opts.Config set to what
// was read). Errors say which, in upstream's words; a setting, the
// directory or a plugin missing wraps ErrInvalidOptions.
func Load(configPath string, opts Options) (*Providers, error) {
	if configPath == "" && opts.BinDir == "" {
		return nil, nil
	}
	// Upstream's order: the directory, then the configuration.
	if opts.BinDir == "" {
		return nil, fmt.Errorf("image credential providers: plugin binary directory \"\" did not exist: %w", ErrInvalidOptions)
	}
	if _, err := os.Stat(opts.BinDir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("image credential providers: plugin binary directory %s did not exist: %w", opts.BinDir, ErrInvalidOptions)
	} else if err != nil {
		return nil, fmt.Errorf("image credential providers: inspecting the plugin binary directory: %w", err)
	}
	if configPath == "" {
		return nil, fmt.Errorf("image credential providers: credential provider config path is empty: %w", ErrInvalidOptions)
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	opts.Config = cfg
	return New(opts)
}

// Credentials returns the credentials the matching providers give for
// image, pulled for pod, most specific location first; it implements
// podsync.Credentials. A provider with tokenAttributes is sent a token of
// the pod's service account bound to the pod, and the annotations of the
// service account it names; it gives nothing for a pod without a service
// account (nil, or no spec.serviceAccountName) when it requires one, nor
// when the service account lacks a required annotation.
func (p *Providers) Credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	tracked := p.TrackedCredentials(ctx, pod, image)
	if len(tracked) == 0 {
		return nil
	}
	out := make([]*runtimeapi.AuthConfig, len(tracked))
	for i, t := range tracked {
		out[i] = t.Auth
	}
	return out
}

// TrackedCredentials is Credentials with where each comes from
// (podsync.TrackedCredentials): a provider that was given a token of the
// pod's service account gives credentials of that service account
// (cri.TrackedAuth.ServiceAccount: its namespace, name and UID), which the
// records of pulled images keep so that only pods of that service account
// may use the image without a pull; the others' are the node's own.
func (p *Providers) TrackedCredentials(ctx context.Context, pod *v1.Pod, image string) []cri.TrackedAuth {
	repo := cri.ImageRepository(image)
	var k cri.Keyring
	taken := map[string]bool{}
	for _, pl := range p.plugins {
		if !pl.matches(repo) {
			continue
		}
		auth, sa, err := pl.provide(ctx, pod, repo)
		if errors.Is(err, errNotAsked) {
			// A pod's opt-in, or out: upstream logs it only verbosely.
			p.log.Debug("Credential provider plugin not invoked", "provider", pl.cfg.Name, "image", repo, "pod", podRef(pod), "err", err)
			continue
		}
		if err != nil {
			p.log.Warn("Failed getting credential from external registry credential provider", "provider", pl.cfg.Name, "image", repo, "err", err)
			continue
		}
		for loc, a := range auth {
			// A location two providers answer is the earlier one's.
			if taken[loc] {
				continue
			}
			taken[loc] = true
			k.AddTracked(loc, cri.TrackedAuth{Auth: &runtimeapi.AuthConfig{Username: a.Username, Password: a.Password}, ServiceAccount: sa.id})
		}
	}
	return k.LookupTracked(repo)
}

// matches says whether one of the plugin's matchImages covers repo.
func (pl *plugin) matches(repo string) bool {
	for _, m := range pl.cfg.MatchImages {
		if cri.LocationMatches(m, repo) {
			return true
		}
	}
	return false
}

// cacheKeys are the keys an answer for repo may be cached under, most
// specific first; saKey is the service account's part (serviceAccountKey),
// empty without one.
func cacheKeys(repo, saKey string) []string {
	registry, _, _ := strings.Cut(repo, "/")
	keys := []string{"image:" + repo, "registry:" + registry, "global:"}
	if saKey != "" {
		for i := range keys {
			keys[i] += "\x00" + saKey
		}
	}
	return keys
}

// provide returns the plugin's answer for repo pulled for pod: from the
// cache, from a run already under way for it, or from a new run.
func (pl *plugin) provide(ctx context.Context, pod *v1.Pod, repo string) (map[string]credentialproviderv1.AuthConfig, serviceAccount, error) {
	sa, err := pl.serviceAccount(ctx, pod)
	if err != nil {
		return nil, sa, err
	}
	now := pl.clock.Now()
	keys := cacheKeys(repo, sa.key)
	pl.mu.Lock()
	for _, key := range keys {
		if c, ok := pl.cache[key]; ok {
			if now.Before(c.expires) {
				pl.mu.Unlock()
				return c.auth, sa, nil
			}
			delete(pl.cache, key)
		}
	}
	flight := keys[0] + "\x00" + hashOf(sa.token)
	if r, ok := pl.inflight[flight]; ok {
		pl.mu.Unlock()
		select {
		case <-r.done:
			return r.auth, sa, nil
		case <-ctx.Done():
			return nil, sa, ctx.Err()
		}
	}
	r := &run{done: make(chan struct{})}
	pl.inflight[flight] = r
	pl.mu.Unlock()

	resp, err := pl.exec(ctx, repo, sa)
	if err == nil {
		err = pl.checkTokenNotEchoed(resp, sa.token)
	}
	pl.mu.Lock()
	delete(pl.inflight, flight)
	if err == nil {
		r.auth = resp.Auth
		pl.store(keys, resp, now)
	}
	pl.mu.Unlock()
	close(r.done)
	return r.auth, sa, err
}

// store caches an answer under the key its cacheKeyType names, for its
// cacheDuration or the provider's default; zero keeps nothing.
func (pl *plugin) store(keys []string, resp *credentialproviderv1.CredentialProviderResponse, now time.Time) {
	d := pl.cfg.DefaultCacheDuration.Duration
	if resp.CacheDuration != nil {
		d = resp.CacheDuration.Duration
	}
	if d <= 0 {
		return
	}
	var key string
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		key = keys[0]
	case credentialproviderv1.RegistryPluginCacheKeyType:
		key = keys[1]
	case credentialproviderv1.GlobalPluginCacheKeyType:
		key = keys[2]
	}
	for k, c := range pl.cache {
		if !now.Before(c.expires) {
			delete(pl.cache, k)
		}
	}
	pl.cache[key] = cached{auth: resp.Auth, expires: now.Add(d)}
}

// exec runs the plugin once for repo, with the service account's token and
// annotations if any, and checks its answer.
func (pl *plugin) exec(ctx context.Context, repo string, sa serviceAccount) (*credentialproviderv1.CredentialProviderResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	req, err := json.Marshal(&credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: pl.cfg.APIVersion, Kind: "CredentialProviderRequest"},
		Image:    repo, ServiceAccountToken: sa.token, ServiceAccountAnnotations: sa.annotations,
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, pl.path, pl.cfg.Args...)
	cmd.Env = os.Environ()
	for _, e := range pl.cfg.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugin %s: %w", pl.cfg.Name, ctx.Err())
		}
		// Never the plugin's output: it may hold credentials.
		return nil, fmt.Errorf("plugin %s: %w (stderr: %d bytes)", pl.cfg.Name, err, stderr.Len())
	}
	return parseResponse(stdout.Bytes(), pl.cfg.APIVersion)
}

// parseResponse decodes a plugin's answer and checks that it speaks the
// configured apiVersion and names a cache key type.
func parseResponse(data []byte, apiVersion string) (*credentialproviderv1.CredentialProviderResponse, error) {
	resp := &credentialproviderv1.CredentialProviderResponse{}
	if err := json.Unmarshal(data, resp); err != nil {
		return nil, errors.New("the response is not a CredentialProviderResponse in JSON")
	}
	if resp.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("kind was %q, expected CredentialProviderResponse", resp.Kind)
	}
	if resp.APIVersion != apiVersion {
		return nil, fmt.Errorf("apiVersion from credential plugin response did not match expected apiVersion: %s, expected apiVersion: %s", resp.APIVersion, apiVersion)
	}
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType, credentialproviderv1.RegistryPluginCacheKeyType, credentialproviderv1.GlobalPluginCacheKeyType:
	default:
		return nil, fmt.Errorf("invalid cache key type %q: Image, Registry or Global", resp.CacheKeyType)
	}
	if resp.CacheDuration != nil && resp.CacheDuration.Duration < 0 {
		return nil, fmt.Errorf("cacheDuration %s is negative", resp.CacheDuration.Duration)
	}
	return resp, nil
}
