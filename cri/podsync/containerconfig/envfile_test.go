package containerconfig_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func fileKey(volume, path, key string, optional *bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: volume, Path: path, Key: key, Optional: optional}}
}

// env[].valueFrom.fileKeyRef (EnvFiles) reads a key of an env file in an
// emptyDir when the container is created, with upstream's messages for the
// container's CreateContainerConfigError; a path from the pod never leaves
// its volume.
func TestEnvFromFileKeyRef(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, vol, outside string) // vol is the emptyDir's host directory
		env     []v1.EnvVar
		noVols  bool
		want    map[string]string
		wantMsg string // the status message; "" means no error
	}{
		{name: "two keys of one file, beside a plain value, not expanded",
			setup: writeFile("config.env", "CONFIG_1='value1'\nCONFIG_2='$(STATIC) two'\n"),
			env: []v1.EnvVar{{Name: "STATIC", Value: "s"}, {Name: "C1", ValueFrom: fileKey("config", "config.env", "CONFIG_1", nil)},
				{Name: "C2", ValueFrom: fileKey("config", "config.env", "CONFIG_2", &no)}, {Name: "E", Value: "$(C1)"}},
			want: map[string]string{"STATIC": "s", "C1": "value1", "C2": "$(STATIC) two", "E": "value1"}},
		{name: "a file in a subdirectory", setup: writeFile("sub/dir/app.env", "K='v'\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "sub/dir/app.env", "K", nil)}}, want: map[string]string{"K": "v"}},
		{name: "an absolute path is read inside the volume", setup: writeFile("config.env", "K='v'\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "/config.env", "K", nil)}}, want: map[string]string{"K": "v"}},
		{name: "a symlink inside the volume is followed", setup: func(t *testing.T, vol, outside string) {
			writeFile("real.env", "K='v'\n")(t, vol, outside)
			require.NoError(t, os.Symlink("real.env", filepath.Join(vol, "config.env")))
		}, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}}, want: map[string]string{"K": "v"}},
		{name: "optional missing key: left out", setup: writeFile("config.env", "EXISTING_KEY='value'\n"),
			env: []v1.EnvVar{{Name: "E", ValueFrom: fileKey("config", "config.env", "EXISTING_KEY", nil)},
				{Name: "M", ValueFrom: fileKey("config", "config.env", "OPTIONAL_MISSING_KEY", &yes)}},
			want: map[string]string{"E": "value"}},
		{name: "optional empty value: left out", setup: writeFile("config.env", "K=''\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", &yes)}}, want: map[string]string{}},
		{name: "missing key", setup: writeFile("config.env", "EXISTING_KEY='value'\n"),
			env:     []v1.EnvVar{{Name: "M", ValueFrom: fileKey("config", "config.env", "MISSING_KEY", nil)}},
			wantMsg: `environment variable key "MISSING_KEY" not found in file "<vol>/config.env"`},
		{name: "empty value, not optional: as missing", setup: writeFile("config.env", "K= 'x'\n"),
			env:     []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", &no)}},
			wantMsg: `environment variable key "K" not found in file "<vol>/config.env"`},
		{name: "missing file", env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}},
			wantMsg: "couldn't parse env file"},
		{name: "missing file, optional: still fails, as upstream",
			env:     []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", &yes)}},
			wantMsg: "couldn't parse env file"},
		{name: "bad syntax", setup: writeFile("config.env", "K = 'v'\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", &yes)}}, wantMsg: "couldn't parse env file"},
		{name: "unknown volume", env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("nonexistent-volume", "config.env", "K", nil)}},
			wantMsg: `cannot find the volume "nonexistent-volume" referenced by FileKeyRef`},
		{name: "no volumes on the node", noVols: true, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}},
			wantMsg: `cannot find the volume "config" referenced by FileKeyRef`},
		{name: "a path with .. never leaves the volume", setup: writeFile("config.env", "K='v'\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "../outside/secret.env", "K", nil)}}, wantMsg: "couldn't parse env file"},
		{name: "a symlink out of the volume is not followed", setup: func(t *testing.T, vol, outside string) {
			require.NoError(t, os.Symlink(filepath.Join(outside, "secret.env"), filepath.Join(vol, "config.env")))
		}, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}}, wantMsg: "couldn't parse env file"},
		{name: "a relative symlink out of the volume is not followed", setup: func(t *testing.T, vol, outside string) {
			require.NoError(t, os.Symlink("../outside/secret.env", filepath.Join(vol, "config.env")))
		}, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}}, wantMsg: "couldn't parse env file"},
		{name: "a directory symlink out of the volume is not followed", setup: func(t *testing.T, vol, outside string) {
			require.NoError(t, os.Symlink(outside, filepath.Join(vol, "d")))
		}, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "d/secret.env", "K", nil)}}, wantMsg: "couldn't parse env file"},
		{name: "a FIFO is refused, not waited on", setup: func(t *testing.T, vol, _ string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(vol, "config.env"), 0o600))
		}, env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "config.env", "K", nil)}}, wantMsg: "couldn't parse env file"},
		{name: "a directory", setup: writeFile("d/x", "K='v'\n"),
			env: []v1.EnvVar{{Name: "K", ValueFrom: fileKey("config", "d", "K", nil)}}, wantMsg: "couldn't parse env file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			vol, outside := filepath.Join(dir, "vol"), filepath.Join(dir, "outside")
			require.NoError(t, os.MkdirAll(vol, 0o755))
			require.NoError(t, os.MkdirAll(outside, 0o755))
			// What a path that escaped would read.
			require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.env"), []byte("K='leaked'\n"), 0o600))
			if tc.setup != nil {
				tc.setup(t, vol, outside)
			}
			opts := containerconfig.Options{}
			if !tc.noVols {
				opts.Volumes = containerconfig.VolumeHostPathsFunc(func(*v1.Pod) (map[string]string, error) {
					return map[string]string{"config": vol}, nil
				})
			}
			c := ctr("app")
			c.Env = tc.env
			cfg, err := containerConfig(newBuilder(t, opts), newPod("", nil, c))
			if tc.wantMsg != "" {
				require.Error(t, err)
				assert.Equal(t, replaceVol(tc.wantMsg, vol), statusMessage(err))
				return
			}
			require.NoError(t, err)
			got := map[string]string{}
			for _, kv := range cfg.GetEnvs() {
				got[kv.GetKey()] = string(kv.GetValue())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// writeFile writes an env file at rel in the volume.
func writeFile(rel, content string) func(t *testing.T, vol, outside string) {
	return func(t *testing.T, vol, _ string) {
		p := filepath.Join(vol, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
}

// replaceVol puts the volume's host directory in a message.
func replaceVol(msg, vol string) string { return strings.Replace(msg, "<vol>", vol, 1) }
