package credentialprovider_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
)

const header = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n"

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // in the error, in order; none: valid
	}{
		{"ecr", header + `providers:
- name: ecr-credential-provider
  matchImages: ["*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [get-credentials]
  env: [{name: AWS_PROFILE, value: default}]
`, nil},
		{"empty", "", []string{"the file is empty"}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", []string{`kind "KubeletConfiguration"`}},
		{"unknown field", header + "providers:\n- name: a\n  matchImage: [x.io]\n", []string{`unknown field "matchImage"`}},
		{"no providers", header + "providers: []\n", []string{"providers: Required value: at least 1 item in plugins is required"}},
		{"every field wrong", header + `providers:
- name: a/b
  matchImages: []
  defaultCacheDuration: -1s
  apiVersion: credentialprovider.kubelet.k8s.io/v2
- name: ""
  matchImages: ["https://x.io", "x..io"]
  env: [{value: v}]
- name: "ok"
  matchImages: [x.io]
  defaultCacheDuration: 1m
- name: "ok"
  matchImages: [x.io]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  tokenAttributes: {serviceAccountTokenAudience: x, requireServiceAccount: true}
`, []string{
			`providers[0].name: Invalid value: "a/b": provider name cannot contain '/'`,
			"providers[0].matchImages: Required value: at least 1 item in matchImages is required",
			"providers[0].defaultCacheDuration: Invalid value: \"-1s\": must be greater than or equal to 0",
			`providers[0].apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v2": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1beta1", "credentialprovider.kubelet.k8s.io/v1alpha1"`,
			"providers[1].name: Required value: name is required",
			`providers[1].matchImages[0]: Invalid value: "https://x.io": match image must not have a scheme`,
			`providers[1].matchImages[1]: Invalid value: "x..io": match image has an empty domain label`,
			"providers[1].defaultCacheDuration: Required value: defaultCacheDuration is required",
			"providers[1].apiVersion: Required value: apiVersion is required",
			"providers[1].env[0].name: Required value: name is required",
			"providers[2].apiVersion: Required value: apiVersion is required",
			`providers[3].name: Duplicate value: "ok"`,
			"providers[3].tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := credentialprovider.ParseConfig([]byte(tc.yaml))
			if tc.want == nil {
				require.NoError(t, err)
				assert.Len(t, cfg.Providers, 1)
				return
			}
			assertInOrder(t, err, tc.want)
		})
	}
}

// assertInOrder asserts that err's message has each of want, in order.
func assertInOrder(t *testing.T, err error, want []string) {
	t.Helper()
	require.Error(t, err)
	msg, at := err.Error(), 0
	for _, w := range want {
		i := strings.Index(msg[at:], w)
		if !assert.GreaterOrEqual(t, i, 0, "%q not in (the rest of) %q", w, msg[at:]) {
			return
		}
		at += i + len(w)
	}
}

// tokenAttributes are checked with upstream's rules and words.
func TestParseConfigTokenAttributes(t *testing.T) {
	provider := func(apiVersion, attrs string) string {
		return header + "providers:\n- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: " + apiVersion +
			", tokenAttributes: " + attrs + "}\n"
	}
	const v1 = "credentialprovider.kubelet.k8s.io/v1"
	for _, tc := range []struct {
		name, apiVersion, attrs string
		want                    []string // in the error, in order; none: valid
	}{
		{"token cache", v1, "{serviceAccountTokenAudience: aud, cacheType: Token, requireServiceAccount: true, requiredServiceAccountAnnotationKeys: [example.com/role]}", nil},
		{"service account cache, optional keys", v1, "{serviceAccountTokenAudience: aud, cacheType: ServiceAccount, requireServiceAccount: false, optionalServiceAccountAnnotationKeys: [a, Example.com/B]}", nil},
		{"empty", v1, "{}", []string{
			"providers[0].tokenAttributes.serviceAccountTokenAudience: Required value",
			"providers[0].tokenAttributes.requireServiceAccount: Required value",
			"providers[0].tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token",
		}},
		{"not v1", "credentialprovider.kubelet.k8s.io/v1beta1", "{serviceAccountTokenAudience: aud, cacheType: Token, requireServiceAccount: true}", []string{
			"providers[0].tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version",
		}},
		{"bad cache type", v1, "{serviceAccountTokenAudience: aud, cacheType: Pod, requireServiceAccount: true}", []string{
			`providers[0].tokenAttributes.cacheType: Unsupported value: "Pod": supported values: "ServiceAccount", "Token"`,
		}},
		{"required keys without requiring a service account", v1, "{serviceAccountTokenAudience: aud, cacheType: Token, requireServiceAccount: false, requiredServiceAccountAnnotationKeys: [a]}", []string{
			"providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set",
		}},
		{"bad and duplicate keys, a key in both lists", v1, "{serviceAccountTokenAudience: aud, cacheType: Token, requireServiceAccount: true, requiredServiceAccountAnnotationKeys: [a, 'b c', a], optionalServiceAccountAnnotationKeys: [a, -x]}", []string{
			`providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Invalid value: "b c": name part must consist of alphanumeric characters`,
			`providers[0].tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: "a"`,
			`providers[0].tokenAttributes.optionalServiceAccountAnnotationKeys: Invalid value: "-x": name part must consist of alphanumeric characters`,
			`providers[0].tokenAttributes: Invalid value: ["a"]: annotation keys cannot be both required and optional`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credentialprovider.ParseConfig([]byte(provider(tc.apiVersion, tc.attrs)))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			assertInOrder(t, err, tc.want)
		})
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(path, []byte(header+"providers: []\n"), 0o600))
	_, err := credentialprovider.LoadConfig(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image credential provider config "+path+": providers: Required value")
	_, err = credentialprovider.LoadConfig(filepath.Join(t.TempDir(), "none.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(header + "providers:\n- name: a\n  matchImages: [\"*.x.io:5000/p\"]\n  defaultCacheDuration: 1m\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := credentialprovider.ParseConfig(data)
		if err == nil && len(cfg.Providers) == 0 {
			t.Fatalf("a valid configuration without providers: %q", data)
		}
	})
}

// A directory's .json, .yaml and .yml files are read in lexical order and
// their providers put in one list, as upstream's since 1.34.
func TestLoadConfigDirectory(t *testing.T) {
	provider := func(name string) string {
		return "- {name: " + name + ", matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n"
	}
	write := func(t *testing.T, dir string, files map[string]string) {
		t.Helper()
		for name, data := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // the providers' names, in order
		err   string   // in the error, with <dir> for the directory
	}{
		{name: "merged in lexical order", files: map[string]string{
			"20-b.yml":    header + "providers:\n" + provider("b") + provider("c"),
			"10-a.yaml":   header + "providers:\n" + provider("a"),
			"30-d.json":   `{"apiVersion": "kubelet.config.k8s.io/v1", "kind": "CredentialProviderConfig", "providers": [{"name": "d", "matchImages": ["x.io"], "defaultCacheDuration": "1m", "apiVersion": "credentialprovider.kubelet.k8s.io/v1"}]}`,
			"40-e.conf":   "not read",
			"README.md":   "not read",
			"50-none.yml": header + "providers: []\n", // no provider of its own: fine in a directory
		}, want: []string{"a", "b", "c", "d"}},
		{name: "a name in two files", files: map[string]string{
			"1.yaml": header + "providers:\n" + provider("a"),
			"2.yaml": header + "providers:\n" + provider("a"),
		}, err: `image credential provider config <dir>/2.yaml: duplicate provider name "a" found in configuration file(s): also in <dir>/1.yaml`},
		{name: "a bad file named", files: map[string]string{
			"1.yaml": header + "providers:\n" + provider("a"),
			"2.yaml": header + "providers:\n- {name: b, matchImages: [x.io], apiVersion: credentialprovider.kubelet.k8s.io/v1}\n",
		}, err: "image credential provider config <dir>/2.yaml: providers[0].defaultCacheDuration: Required value"},
		{name: "no provider in any file", files: map[string]string{"1.yaml": header + "providers: []\n"},
			err: "image credential provider config <dir>: providers: Required value: at least 1 item in plugins is required"},
		{name: "no file", files: map[string]string{"a.conf": "x"}, err: "no configuration files found in directory <dir>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.files)
			cfg, err := credentialprovider.LoadConfig(dir)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), strings.ReplaceAll(tc.err, "<dir>", dir))
				return
			}
			require.NoError(t, err)
			var names []string
			for _, p := range cfg.Providers {
				names = append(names, p.Name)
			}
			assert.Equal(t, tc.want, names)
		})
	}
}
