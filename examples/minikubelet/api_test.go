package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/examples/websockets"
)

// On the embedded fake runtime, the kubelet API (--port) serves what
// kubectl asks a node for: the pods, a container's log, and an exec with
// its output streamed back over SPDY (client-go's executor, as kubectl
// exec and the API server use), here for an anonymous user
// (--anonymous-auth, AlwaysAllow), and /configz the settings it runs
// with.
func TestKubeletAPIOnTheFakeRuntime(t *testing.T) {
	port := freePort(t)
	out := startNode(t, "--read-only-port", "0", "--port", port, "--anonymous-auth")
	base := "https://127.0.0.1:" + port
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the node's self-signed certificate
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	// The agent's real clock: poll until the pod runs.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := get("/pods")
		if code == http.StatusOK && strings.Contains(body, `"phase":"Running"`) {
			var pods v1.PodList
			require.NoError(t, json.Unmarshal([]byte(body), &pods))
			require.Len(t, pods.Items, 1)
			assert.Equal(t, "web-edge1", pods.Items[0].Name)
			break
		}
		require.True(t, time.Now().Before(deadline), "web-edge1 not Running; /pods: %d %s", code, body)
	}
	assert.Contains(t, out.String(), "kubelet API https://127.0.0.1:"+port)

	code, body := get("/configz")
	require.Equal(t, http.StatusOK, code, body)
	var configz struct {
		KubeletConfig kubeletconfig.KubeletConfiguration `json:"kubeletconfig"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &configz), body)
	kc := configz.KubeletConfig
	assert.Equal(t, "KubeletConfiguration", kc.Kind)
	assert.Equal(t, strconv.Itoa(int(kc.Port)), port)
	assert.Zero(t, kc.ReadOnlyPort)
	assert.Equal(t, "manifests", filepath.Base(kc.StaticPodPath))
	assert.Equal(t, ptr.To(true), kc.Authentication.Anonymous.Enabled)
	assert.Equal(t, kubeletconfig.KubeletAuthorizationModeAlwaysAllow, kc.Authorization.Mode)
	assert.Empty(t, kc.EvictionHard, "--eviction-hard \"\"")
	assert.Equal(t, ptr.To(true), kc.EnableSystemLogHandler)

	// /flagz lists the command line's flags; /statusz the node; /logs/
	// the node's /var/log/.
	code, body = get("/flagz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "\nkubelet flagz\n")
	assert.Regexp(t, `\nport(:|: |=| )`+port+`\n`, body)
	assert.Regexp(t, `\nanonymous-auth(:|: |=| )true\n`, body)
	code, body = get("/statusz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "\nkubelet statusz\n")
	assert.Regexp(t, `\nPaths(:|: |=| ) /attach .*/flagz .*/logs `, body)
	code, body = get("/logs/")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<pre>\n")

	code, body = get("/containerLogs/default/web-edge1/web")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get("/containerLogs/default/web-edge1/nosuch")
	assert.Equal(t, http.StatusNotFound, code, body)

	q := url.Values{"command": {"sh", "-c", "echo out; exit 3"}, "output": {"1"}, "error": {"1"}}
	u, err := url.Parse(base + "/exec/default/web-edge1/web?" + q.Encode())
	require.NoError(t, err)
	exec, err := remotecommand.NewSPDYExecutor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, http.MethodPost, u)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	sctx, scancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer scancel()
	err = exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	require.Error(t, err, "exit code 3; stdout %q stderr %q", stdout.String(), stderr.String())
	assert.EqualError(t, err, "command terminated with exit code 3")
	assert.Equal(t, "out\n", stdout.String())
	assert.Empty(t, stderr.String())

	// Over v5.channel.k8s.io, as kubectl 1.30 and later exec, which the
	// API server forwards as it is to a node that declares
	// ExtendWebSocketsToKubelet (minikubelet's default).
	ws, err := remotecommand.NewWebSocketExecutor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, http.MethodGet, u.String())
	require.NoError(t, err)
	stdout.Reset()
	err = ws.StreamWithContext(sctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	assert.EqualError(t, err, "command terminated with exit code 3")
	assert.Equal(t, "out\n", stdout.String())
	assert.Empty(t, stderr.String())
}

// The kubelet API serves kubectl's WebSockets with upstream kubelet's
// translator (and the agent declares ExtendWebSocketsToKubelet for it),
// unless --extend-websockets-to-kubelet=false; without a kubelet API there
// is nothing to serve. minikubelet declares nothing of its own: the agent
// declares what its blocks implement.
func TestWebSocketsOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		api  bool
	}{
		{"by default", nil, true},
		{"turned off", []string{"--extend-websockets-to-kubelet=false"}, false},
		{"no kubelet API", []string{"--port", "0"}, false},
		{"runonce", []string{"--runonce"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := parseFlags(append([]string{"--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", dir}, tc.args...), io.Discard)
			require.NoError(t, err)
			opts, _, err := options(c, io.Discard, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			if tc.api {
				require.NotNil(t, opts.HTTP.API)
				assert.Equal(t, websockets.Translator{}, opts.HTTP.API.WebSockets)
			} else if opts.HTTP.API != nil {
				assert.Nil(t, opts.HTTP.API.WebSockets)
			}
			assert.Empty(t, opts.Node.DeclaredFeatures)
		})
	}
}
