package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// credentialConfig writes a CredentialProviderConfig of one provider,
// fake-provider, for the images of *.registry.example, and returns its path.
func credentialConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "credential-providers.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: fake-provider
  matchImages: ["*.registry.example"]
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`+extra), 0o600))
	return path
}

// The two flags go together, as upstream's: neither, no plugins; both,
// the plugins; one alone, a bad file or a missing plugin stops the start,
// with upstream's words naming the flag, the file and the field.
func TestImageCredentialFlags(t *testing.T) {
	dir := t.TempDir()
	good := credentialConfig(t, dir, "  defaultCacheDuration: 1m\n")
	bad := credentialConfig(t, t.TempDir(), "") // no defaultCacheDuration
	binDir := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(binDir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(binDir, "fake-provider"), []byte("#!/bin/sh\nexit 1\n"), 0o700)) // never run here
	tokens := credentialConfig(t, t.TempDir(), "  defaultCacheDuration: 1m\n"+
		"  tokenAttributes: {serviceAccountTokenAudience: registry.example, cacheType: Token, requireServiceAccount: true}\n")
	for _, tt := range []struct {
		name    string
		args    []string
		joined  bool   // to an API server
		plugins bool   // the node gets credentials
		err     string // in the error; "": none
	}{
		{name: "service account tokens, joined", args: []string{"--image-credential-provider-config", tokens, "--image-credential-provider-bin-dir", binDir},
			joined: true, plugins: true},
		{name: "service account tokens, standalone", args: []string{"--image-credential-provider-config", tokens, "--image-credential-provider-bin-dir", binDir},
			err: "providers[0].tokenAttributes: service account tokens for credential provider plugins are not supported by this node"},
		{name: "neither"},
		{name: "both", args: []string{"--image-credential-provider-config", good, "--image-credential-provider-bin-dir", binDir}, plugins: true},
		{name: "config only", args: []string{"--image-credential-provider-config", good},
			err: `--image-credential-provider-config="` + good + `" --image-credential-provider-bin-dir="": image credential providers: plugin binary directory "" did not exist`},
		{name: "bin dir only", args: []string{"--image-credential-provider-bin-dir", binDir}, err: "credential provider config path is empty"},
		{name: "bad config", args: []string{"--image-credential-provider-config", bad, "--image-credential-provider-bin-dir", binDir},
			err: "image credential provider config " + bad + ": providers[0].defaultCacheDuration: Required value"},
		{name: "plugin missing", args: []string{"--image-credential-provider-config", good, "--image-credential-provider-bin-dir", dir},
			err: "plugin binary executable " + filepath.Join(dir, "fake-provider") + " did not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(append(tt.args, "--root-dir", t.TempDir()), io.Discard)
			require.NoError(t, err)
			var joined *apiserver.Joined
			if tt.joined {
				joined, err = apiserver.Join(k8sfake.NewClientset(), "edge1", apiserver.JoinOptions{})
				require.NoError(t, err)
			}
			creds, err := imageCredentials(c, joined, slog.New(slog.DiscardHandler))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.plugins, creds != nil)
		})
	}
}

// A real plugin (cri/credentialprovider's test plugin, built here) gives
// the node credentials for the image it matches: PullImage gets them, and
// an image it does not match is pulled without.
func TestImageCredentialProviderPlugin(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "fake-provider"), "github.com/kubeletkit/kubeletkit/cri/credentialprovider/testdata/plugin")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the plugin: %s", out)
	config := credentialConfig(t, dir, "  defaultCacheDuration: 1m\n")
	manifests := webManifests(t, dir) // web: busybox:1.36, which the plugin does not match
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "private.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  containers:
  - {name: app, image: eu.registry.example/team/app:1.0}
`), 0o600))
	rt, sock := serveFake(t, dir)

	var stdout, logs syncBuffer
	err = run(context.Background(), []string{"--runonce", "--container-runtime-endpoint", "unix://" + sock, "--node-name", "edge1",
		"--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", manifests, "--eviction-hard", "",
		"--image-credential-provider-config", config, "--image-credential-provider-bin-dir", binDir}, &stdout, &logs)
	require.NoError(t, err, logs.String())
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &list), stdout.String())
	require.Len(t, list.Items, 2)
	for _, p := range list.Items {
		assert.Equal(t, v1.PodRunning, p.Status.Phase, p.Name)
	}

	auths := map[string]*runtimeapi.AuthConfig{}
	for _, c := range rt.CallsOf(fake.PullImage) {
		req := c.Request.(*runtimeapi.PullImageRequest)
		auths[req.GetImage().GetImage()] = req.GetAuth()
	}
	require.Contains(t, auths, "eu.registry.example/team/app:1.0")
	assert.Equal(t, "user-for-eu.registry.example/team/app", auths["eu.registry.example/team/app:1.0"].GetUsername(), "the plugin's answer")
	assert.Equal(t, "secret", auths["eu.registry.example/team/app:1.0"].GetPassword())
	require.Contains(t, auths, "busybox:1.36")
	assert.Nil(t, auths["busybox:1.36"], "no credentials for an image the plugin does not match")
}
