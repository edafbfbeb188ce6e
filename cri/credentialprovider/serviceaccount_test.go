package credentialprovider_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
)

// fakeServiceAccounts is an API server's service accounts for the tests.
// Its token names the service account, the audience, the pod it is bound
// to and the rotation, so that a pod keeps its token until the test
// rotates them all. It is safe for concurrent use and records the token
// requests.
type fakeServiceAccounts struct {
	mu       sync.Mutex
	accounts map[string]*v1.ServiceAccount // by namespace/name
	rotation int
	tokenErr error
	expires  time.Time // of the tokens; zero: none said
	requests []tokenCall
}

// tokenCall is one CreateToken.
type tokenCall struct {
	Namespace, Name string
	Request         *authenticationv1.TokenRequest
}

var _ credentialprovider.ServiceAccounts = (*fakeServiceAccounts)(nil)

func newFakeServiceAccounts(accounts ...*v1.ServiceAccount) *fakeServiceAccounts {
	f := &fakeServiceAccounts{accounts: map[string]*v1.ServiceAccount{}}
	for _, sa := range accounts {
		f.put(sa)
	}
	return f
}

// put adds or replaces a service account.
func (f *fakeServiceAccounts) put(sa *v1.ServiceAccount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accounts[sa.Namespace+"/"+sa.Name] = sa.DeepCopy()
}

func (f *fakeServiceAccounts) GetServiceAccount(_ context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sa, ok := f.accounts[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
	}
	return sa.DeepCopy(), nil
}

func (f *fakeServiceAccounts) GetServiceAccountToken(_ context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, tokenCall{Namespace: namespace, Name: name, Request: req.DeepCopy()})
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("token:%s/%s:%v:%s:%d", namespace, name, req.Spec.Audiences, req.Spec.BoundObjectRef.UID, f.rotation)
	out.Status.ExpirationTimestamp = metav1.NewTime(f.expires)
	return out, nil
}

// rotate changes every token from now on.
func (f *fakeServiceAccounts) rotate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rotation++
}

// calls returns the token requests so far.
func (f *fakeServiceAccounts) calls() []tokenCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tokenCall(nil), f.requests...)
}

// pluginRequest is what the test plugin was sent.
type pluginRequest struct {
	Image                     string            `json:"image"`
	ServiceAccountToken       string            `json:"serviceAccountToken"`
	ServiceAccountAnnotations map[string]string `json:"serviceAccountAnnotations"`
}

// requestsFile is the env var making the test plugin record its requests
// in a file of t's, and the file.
func requestsFile(t *testing.T) (kubeletconfigv1.ExecEnvVar, string) {
	path := filepath.Join(t.TempDir(), "requests")
	return kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_REQUESTS", Value: path}, path
}

// readRequests returns the requests the test plugin recorded, in order.
func readRequests(t *testing.T, path string) []pluginRequest {
	t.Helper()
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer file.Close()
	var reqs []pluginRequest
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var r pluginRequest
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		reqs = append(reqs, r)
	}
	require.NoError(t, sc.Err())
	return reqs
}

func serviceAccount(name, uid string, annotations map[string]string) *v1.ServiceAccount {
	return &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(uid), Annotations: annotations}}
}

func podOf(name, serviceAccount string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name + "-uid")},
		Spec: v1.PodSpec{ServiceAccountName: serviceAccount}}
}

func tokenAttributes(cacheType kubeletconfigv1.ServiceAccountTokenCacheType, requireServiceAccount bool, required ...string) *kubeletconfigv1.ServiceAccountTokenAttributes {
	return &kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "registry.example", CacheType: cacheType,
		RequireServiceAccount: &requireServiceAccount, RequiredServiceAccountAnnotationKeys: required,
		OptionalServiceAccountAnnotationKeys: []string{"example.com/optional", "example.com/absent"}}
}

// The plugin is sent a token of the pod's service account, bound to the
// pod, for the configured audience, and the annotations it names.
func TestServiceAccountTokenToThePlugin(t *testing.T) {
	sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", map[string]string{
		"example.com/role": "pull", "example.com/optional": "yes", "example.com/other": "not sent"}))
	env, requests := requestsFile(t)
	f := newTokenFixture(t, time.Hour, tokenAttributes(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, "example.com/role"), sas, env)

	got := f.p.Credentials(t.Context(), podOf("web", "builder"), "eu.registry.example/team/app:1.0")
	require.Len(t, got, 1)
	assert.Equal(t, "user-for-eu.registry.example/team/app", got[0].Username)

	require.Equal(t, []tokenCall{{Namespace: "team", Name: "builder", Request: &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: "sa-uid"},
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"registry.example"},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "web-uid"}},
	}}}, sas.calls())
	assert.Equal(t, []pluginRequest{{Image: "eu.registry.example/team/app",
		ServiceAccountToken:       "token:team/builder:[registry.example]:web-uid:0",
		ServiceAccountAnnotations: map[string]string{"example.com/role": "pull", "example.com/optional": "yes"},
	}}, readRequests(t, requests))
}

// requireServiceAccount: a pod without a service account gets nothing
// when it is true, and the plugin run without a token when it is false; a
// required annotation missing, or the API server failing, gives nothing.
func TestServiceAccountRequirements(t *testing.T) {
	for _, tc := range []struct {
		name     string
		require  bool
		required []string
		pod      *v1.Pod
		tokenErr error
		want     []pluginRequest // the plugin's runs; credentials iff any
	}{
		{name: "no service account, required", require: true, pod: podOf("static", "")},
		{name: "no pod, required", require: true},
		{name: "no service account, not required", pod: podOf("static", ""),
			want: []pluginRequest{{Image: "eu.registry.example/team/app"}}},
		{name: "no such service account", require: true, pod: podOf("web", "nobody")},
		{name: "a required annotation missing", require: true, required: []string{"example.com/role", "example.com/missing"}, pod: podOf("web", "builder")},
		{name: "the token refused", require: true, pod: podOf("web", "builder"), tokenErr: errors.New("forbidden")},
		{name: "all there", require: true, required: []string{"example.com/role"}, pod: podOf("web", "builder"),
			want: []pluginRequest{{Image: "eu.registry.example/team/app", ServiceAccountToken: "token:team/builder:[registry.example]:web-uid:0",
				ServiceAccountAnnotations: map[string]string{"example.com/role": "pull"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", map[string]string{"example.com/role": "pull"}))
			sas.tokenErr = tc.tokenErr
			env, requests := requestsFile(t)
			f := newTokenFixture(t, time.Hour, tokenAttributes(kubeletconfigv1.TokenServiceAccountTokenCacheType, tc.require, tc.required...), sas, env)
			got := f.p.Credentials(t.Context(), tc.pod, "eu.registry.example/team/app:1.0")
			assert.Equal(t, tc.want, readRequests(t, requests))
			assert.Equal(t, len(tc.want) > 0, len(got) > 0, "credentials")
		})
	}
}

// The cache key has the service account's namespace, name, UID and the
// annotations sent; with the Token cache type, the token too, as
// upstream's. The pod is not part of it.
func TestServiceAccountCacheKeys(t *testing.T) {
	type step struct {
		do   func(sas *fakeServiceAccounts) // before the pull; nil: none
		pod  *v1.Pod
		runs bool // the plugin ran for this pull
	}
	annotated := func(v string) func(*fakeServiceAccounts) {
		return func(sas *fakeServiceAccounts) {
			sas.put(serviceAccount("builder", "sa-uid", map[string]string{"example.com/optional": v, "example.com/other": "x"}))
		}
	}
	recreated := func(sas *fakeServiceAccounts) {
		sas.put(serviceAccount("builder", "sa-uid-2", map[string]string{"example.com/optional": "2"}))
	}
	unsent := func(sas *fakeServiceAccounts) { // an annotation the provider does not name
		sas.put(serviceAccount("builder", "sa-uid-2", map[string]string{"example.com/optional": "2", "example.com/other": "y"}))
	}
	rotate := func(sas *fakeServiceAccounts) { sas.rotate() }
	for _, tc := range []struct {
		cacheType kubeletconfigv1.ServiceAccountTokenCacheType
		steps     []step
	}{
		{kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, []step{
			{pod: podOf("web-1", "builder"), runs: true},
			{pod: podOf("web-1", "builder")},
			{pod: podOf("web-2", "builder")}, // another pod, same service account
			{pod: podOf("web-3", "deployer"), runs: true},
			{do: annotated("2"), pod: podOf("web-1", "builder"), runs: true},
			{do: recreated, pod: podOf("web-1", "builder"), runs: true}, // another UID
			{do: unsent, pod: podOf("web-1", "builder")},
			{do: rotate, pod: podOf("web-1", "builder")},
		}},
		{kubeletconfigv1.TokenServiceAccountTokenCacheType, []step{
			{pod: podOf("web-1", "builder"), runs: true},
			{pod: podOf("web-1", "builder")},             // the same token
			{pod: podOf("web-2", "builder"), runs: true}, // another pod's token
			{pod: podOf("web-3", "deployer"), runs: true},
			{do: annotated("2"), pod: podOf("web-1", "builder"), runs: true},
			{do: recreated, pod: podOf("web-1", "builder"), runs: true},
			{do: unsent, pod: podOf("web-1", "builder")},
			{do: rotate, pod: podOf("web-1", "builder"), runs: true},
			{pod: podOf("web-1", "builder")},
		}},
	} {
		t.Run(string(tc.cacheType), func(t *testing.T) {
			sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", map[string]string{"example.com/optional": "1"}),
				serviceAccount("deployer", "sa-uid-3", nil))
			env, requests := requestsFile(t)
			f := newTokenFixture(t, time.Hour, tokenAttributes(tc.cacheType, true), sas, env)
			runs := 0
			for i, s := range tc.steps {
				if s.do != nil {
					s.do(sas)
				}
				require.Len(t, f.p.Credentials(t.Context(), s.pod, "eu.registry.example/team/app:1.0"), 1, i)
				if s.runs {
					runs++
				}
				require.Len(t, readRequests(t, requests), runs, "step %d: %s", i, s.pod.Name)
			}
		})
	}
}

// A plugin answering the token as the password is refused unless the
// cache type is Token, as upstream.
func TestServiceAccountTokenEchoed(t *testing.T) {
	for _, tc := range []struct {
		cacheType kubeletconfigv1.ServiceAccountTokenCacheType
		want      string // the password; "": no credentials
	}{
		{kubeletconfigv1.TokenServiceAccountTokenCacheType, "token:team/builder:[registry.example]:web-uid:0"},
		{kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, ""},
	} {
		t.Run(string(tc.cacheType), func(t *testing.T) {
			sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", nil))
			f := newTokenFixture(t, time.Hour, tokenAttributes(tc.cacheType, true), sas,
				kubeletconfigv1.ExecEnvVar{Name: "PLUGIN_PASSWORD_IS_TOKEN", Value: "1"})
			got := f.p.Credentials(t.Context(), podOf("web", "builder"), "eu.registry.example/team/app:1.0")
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0].Password)
		})
	}
}

// A pod's token is kept until 80% of its lifetime has passed, as
// upstream's token manager: its pulls send the same token.
func TestServiceAccountTokenKept(t *testing.T) {
	sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", nil))
	f := newTokenFixture(t, 0, tokenAttributes(kubeletconfigv1.TokenServiceAccountTokenCacheType, true), sas)
	sas.expires = f.clock.Now().Add(time.Hour)
	pull := func(pod string) {
		require.Len(t, f.p.Credentials(t.Context(), podOf(pod, "builder"), "eu.registry.example/team/app:1.0"), 1)
	}
	pull("web")
	pull("web")
	pull("db") // another pod: its own token
	require.Len(t, sas.calls(), 2)
	f.clock.SetTime(f.clock.Now().Add(47 * time.Minute))
	pull("web")
	assert.Len(t, sas.calls(), 2, "before 80% of the hour")
	f.clock.SetTime(f.clock.Now().Add(2 * time.Minute))
	pull("web")
	assert.Len(t, sas.calls(), 3, "past 80% of the hour: a new token")
}

// Without ServiceAccounts (a node without an API server) a provider with
// tokenAttributes is refused by name.
func TestNewRefusesTokenAttributesWithoutServiceAccounts(t *testing.T) {
	cfg := &kubeletconfigv1.CredentialProviderConfig{Providers: []kubeletconfigv1.CredentialProvider{{
		Name: "fake-provider", MatchImages: []string{"x.io"}, DefaultCacheDuration: &metav1.Duration{}, APIVersion: "credentialprovider.kubelet.k8s.io/v1",
		TokenAttributes: tokenAttributes(kubeletconfigv1.TokenServiceAccountTokenCacheType, true)}}}
	_, err := credentialprovider.New(credentialprovider.Options{Config: cfg, BinDir: pluginDir})
	require.ErrorIs(t, err, credentialprovider.ErrNoServiceAccounts)
	require.ErrorIs(t, err, credentialprovider.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "providers[0].tokenAttributes: service account tokens for credential provider plugins are not supported by this node")
	_, err = credentialprovider.New(credentialprovider.Options{Config: cfg, BinDir: pluginDir, ServiceAccounts: newFakeServiceAccounts()})
	assert.NoError(t, err)
}

// TrackedCredentials says whose credentials a provider's are: a service
// account's when the provider was given its token (for the records of
// pulled images), the node's own otherwise; the credentials themselves
// are Credentials'.
func TestTrackedCredentials(t *testing.T) {
	sas := newFakeServiceAccounts(serviceAccount("builder", "sa-uid", nil))
	f := newTokenFixture(t, time.Hour, tokenAttributes(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, false), sas)
	got := f.p.TrackedCredentials(t.Context(), podOf("web", "builder"), "eu.registry.example/team/app:1.0")
	require.Len(t, got, 1)
	assert.Equal(t, &cri.ObjectID{Namespace: "team", Name: "builder", UID: "sa-uid"}, got[0].ServiceAccount)
	assert.Nil(t, got[0].Secret)
	assert.Equal(t, "user-for-eu.registry.example/team/app", got[0].Auth.GetUsername())
	again := f.p.TrackedCredentials(t.Context(), podOf("web-2", "builder"), "eu.registry.example/team/app:1.0")
	require.Len(t, again, 1)
	assert.Equal(t, got[0].ServiceAccount, again[0].ServiceAccount, "from the cache too")

	none := f.p.TrackedCredentials(t.Context(), podOf("static", ""), "eu.registry.example/team/app:1.0")
	require.Len(t, none, 1, "no service account, none required: the plugin runs without a token")
	assert.Nil(t, none[0].ServiceAccount, "the node's own")

	plain := newFixture(t, time.Hour)
	own := plain.p.TrackedCredentials(t.Context(), podOf("web", "builder"), "eu.registry.example/team/app:1.0")
	require.Len(t, own, 1)
	assert.Nil(t, own[0].ServiceAccount, "a provider without tokenAttributes gives the node's own")
}
