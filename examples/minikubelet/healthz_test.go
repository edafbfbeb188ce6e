package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The healthzPort of a configuration file is served as upstream's: GET
// /healthz answers "ok" over plain HTTP once the node runs, what kubeadm
// join's kubelet-check waits for.
func TestHealthzPortFromConfigFile(t *testing.T) {
	dir := t.TempDir()
	_, sock := serveFake(t, dir)
	port := freePort(t)
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
staticPodPath: %s
podLogsDir: %s
enableServer: false
healthzBindAddress: 127.0.0.1
healthzPort: %s
authentication: {webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupsPerQOS: false
enforceNodeAllocatable: []
evictionHard: {}
`, sock, webManifests(t, dir), filepath.Join(dir, "logs"), port), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out, logs := &syncBuffer{}, &syncBuffer{}
	go func() {
		done <- run(ctx, []string{"--config", config, "--node-name", "edge1", "--root-dir", filepath.Join(dir, "root")}, out, logs)
	}()
	defer func() {
		cancel()
		assert.NoError(t, <-done, logs.String())
	}()

	url := "http://127.0.0.1:" + port + "/healthz"
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "no %s; %s", url, logs.String())
	assert.Equal(t, "ok", body)
	assert.Contains(t, out.String(), ", healthz "+url)
}

// --healthz-port and --healthz-bind-address, upstream's flags, override
// the file's fields; without --config they start from upstream's
// defaults, 127.0.0.1:10248; 0 turns the port off, and --runonce serves
// none.
func TestHealthzFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // "": none
	}{
		{"upstream's default", nil, "127.0.0.1:10248"},
		{"another port", []string{"--healthz-port", "10249"}, "127.0.0.1:10249"},
		{"every interface", []string{"--healthz-bind-address", "::"}, "[::]:10248"},
		{"off", []string{"--healthz-port", "0"}, ""},
		{"runonce", []string{"--runonce"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := parseFlags(append([]string{"--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", dir}, tc.args...), io.Discard)
			require.NoError(t, err)
			opts, _, err := options(c, io.Discard, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, opts.HTTP.Healthz)
				return
			}
			require.NotNil(t, opts.HTTP.Healthz)
			assert.Equal(t, tc.want, opts.HTTP.Healthz.Listen)
		})
	}
	for want, args := range map[string][]string{
		`"localhost" is not an IP address`: {"--healthz-bind-address", "localhost"},
		"invalid configuration: healthzPort (--healthz-port) 65536 must be between 1 and 65535, inclusive": {"--healthz-port", "65536"},
	} {
		_, err := parseFlags(append([]string{"--root-dir", t.TempDir()}, args...), io.Discard)
		assert.ErrorContains(t, err, want)
	}
}
