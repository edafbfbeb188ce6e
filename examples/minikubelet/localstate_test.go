package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// joinedConfig parses args after the flags of a node joined to an API
// server at 127.0.0.1:6443 (which need not run: options starts nothing),
// whose root is dir/root.
func joinedConfig(t *testing.T, dir string, args ...string) *config {
	t.Helper()
	kubeconfig := kubeconfigFile(t, dir)
	c, err := parseFlags(append([]string{"--kubeconfig", kubeconfig, "--root-dir", filepath.Join(dir, "root"), "--node-name", "edge1"}, args...), io.Discard)
	require.NoError(t, err)
	return c
}

// A damaged local state does not stop minikubelet: the store moves the
// file aside and logs it, and the node starts without it.
func TestDamagedLocalStateIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	c := joinedConfig(t, dir)
	require.NoError(t, os.MkdirAll(c.rootDir, 0o700))
	path := filepath.Join(c.rootDir, "localstate.db")
	damaged := bytes.Repeat([]byte("damaged!"), 2048)
	require.NoError(t, os.WriteFile(path, damaged, 0o600))
	var logs syncBuffer
	_, _, err := options(c, io.Discard, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.NotNil(t, c.localState)
	defer c.localState.Close()
	rec, ok := c.localState.Recovered()
	require.True(t, ok, "the damage is not reported")
	aside, err := os.ReadFile(rec.Aside)
	require.NoError(t, err)
	assert.Equal(t, damaged, aside, "the damaged file is not kept aside")
	assert.Contains(t, logs.String(), "level=ERROR msg=\"the local state is damaged: moved aside")
	assert.Contains(t, logs.String(), "component=localstate")
}

func TestLocalStateKeyFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		content string
		args    []string
		want    string // the error; "" for none
	}{
		{name: "owner only", mode: 0o600, content: strings.Repeat("5a", 32) + "\n"},
		{name: "group-readable", mode: 0o640, content: strings.Repeat("5a", 32), want: "--local-state-key-file: key file"},
		{name: "the wrong size", mode: 0o400, content: "short", want: "a key of 5 bytes"},
		{name: "no local state", mode: 0o600, content: strings.Repeat("5a", 32), args: []string{"--local-state", ""}, want: "there is no local state to seal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			key := filepath.Join(dir, "key")
			require.NoError(t, os.WriteFile(key, []byte(tc.content), 0o600))
			require.NoError(t, os.Chmod(key, tc.mode))
			c := joinedConfig(t, dir, append([]string{"--local-state-key-file", key}, tc.args...)...)
			var logs syncBuffer
			_, _, err := options(c, io.Discard, slog.New(slog.NewTextHandler(&logs, nil)))
			if c.localState != nil {
				defer c.localState.Close()
			}
			if tc.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				assert.NotContains(t, err.Error(), tc.content)
				return
			}
			require.NoError(t, err)
			assert.NotContains(t, logs.String(), "no SecretKey", "the key was not used")
		})
	}
	// Without a key the local state keeps no secrets, and says so.
	c := joinedConfig(t, t.TempDir())
	var logs syncBuffer
	_, _, err := options(c, io.Discard, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	defer c.localState.Close()
	assert.Contains(t, logs.String(), "no SecretKey: the local state keeps no secrets")
}
