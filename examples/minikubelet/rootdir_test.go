package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the embedded fake runtime without --kubeconfig, each run has a root
// of its own (its containers die with the process; an old root's logs
// would show as restarts); a root given, a real runtime or an API server
// keep the root across runs.
func TestFreshRootDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		fresh bool
	}{
		{"embedded, no --root-dir", nil, true},
		{"--root-dir given", []string{"--root-dir", "/srv/mk"}, false},
		{"a real runtime", []string{"--container-runtime-endpoint", "unix:///x.sock"}, false},
		{"an API server", []string{"--kubeconfig", "/etc/kubernetes/kubelet.conf"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.fresh, c.freshRoot)
			if !tc.fresh {
				assert.NotContains(t, c.rootDir, "minikubelet-")
				return
			}
			assert.Equal(t, os.TempDir(), filepath.Dir(c.rootDir))
			assert.True(t, strings.HasPrefix(filepath.Base(c.rootDir), "minikubelet-"), c.rootDir)
			assert.Equal(t, filepath.Join(c.rootDir, "logs"), c.kc.PodLogsDir, "the pods' logs under the run's root")
			again, err := parseFlags(tc.args, io.Discard)
			require.NoError(t, err)
			assert.NotEqual(t, c.rootDir, again.rootDir, "another run, another root")
		})
	}
}

// The run's own root is gone when it ends, and nothing was mounted under it.
func TestFreshRootDirRemovedAtExit(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	manifests := webManifests(t, t.TempDir())
	require.NoError(t, run(context.Background(), []string{"--runonce", "--node-name", "edge1", "--pod-manifest-path", manifests,
		"--eviction-hard", "", "--port", "0", "--healthz-port", "0"}, io.Discard, io.Discard))
	left, err := os.ReadDir(os.TempDir())
	require.NoError(t, err)
	assert.Empty(t, left)
}
