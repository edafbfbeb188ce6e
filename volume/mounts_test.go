package volume_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

func TestMounts(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"app.conf": "x"}})
	outside := t.TempDir()
	host := t.TempDir()
	pod := newPod("p",
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
	)
	require.NoError(t, h.mount(pod))
	cache := h.volDir(pod, volume.EmptyDirPluginName, "cache")
	cfg := h.volDir(pod, volume.ConfigMapPluginName, "cfg")
	// Symlinks a container could have planted in its emptyDir.
	require.NoError(t, os.Symlink(outside, filepath.Join(cache, "escape")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(cache, "abs")))
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "real", "dir"), 0o755))
	require.NoError(t, os.Symlink("real/dir", filepath.Join(cache, "inside")))

	realCache, err := filepath.EvalSymlinks(cache)
	require.NoError(t, err)
	realCfg, err := filepath.EvalSymlinks(cfg)
	require.NoError(t, err)
	dataDir, err := os.Readlink(filepath.Join(cfg, "..data"))
	require.NoError(t, err)

	privileged := &v1.SecurityContext{Privileged: ptr(true)}
	for _, tc := range []struct {
		name    string
		vm      v1.VolumeMount
		sc      *v1.SecurityContext
		env     []v1.EnvVar
		want    *runtimeapi.Mount
		wantErr string
	}{
		{name: "plain", vm: v1.VolumeMount{Name: "cache", MountPath: "/cache"},
			want: &runtimeapi.Mount{ContainerPath: "/cache", HostPath: cache, SelinuxRelabel: true}},
		{name: "read-only mount", vm: v1.VolumeMount{Name: "cache", MountPath: "/cache", ReadOnly: true},
			want: &runtimeapi.Mount{ContainerPath: "/cache", HostPath: cache, Readonly: true, SelinuxRelabel: true}},
		{name: "configMap is read-only", vm: v1.VolumeMount{Name: "cfg", MountPath: "/etc/app"},
			want: &runtimeapi.Mount{ContainerPath: "/etc/app", HostPath: cfg, Readonly: true, SelinuxRelabel: true}},
		{name: "configMap key by subPath resolves to the data file", vm: v1.VolumeMount{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
			want: &runtimeapi.Mount{ContainerPath: "/etc/app.conf", HostPath: filepath.Join(realCfg, dataDir, "app.conf"), Readonly: true, SelinuxRelabel: true}},
		{name: "subPath created", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "new/sub"},
			want: &runtimeapi.Mount{ContainerPath: "/d", HostPath: filepath.Join(realCache, "new", "sub"), SelinuxRelabel: true}},
		{name: "missing subPath created in a read-only volume too, as upstream", vm: v1.VolumeMount{Name: "cfg", MountPath: "/d", SubPath: "nope"},
			want: &runtimeapi.Mount{ContainerPath: "/d", HostPath: filepath.Join(realCfg, "nope"), Readonly: true, SelinuxRelabel: true}},
		{name: "subPath through an inside symlink", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "inside"},
			want: &runtimeapi.Mount{ContainerPath: "/d", HostPath: filepath.Join(realCache, "real", "dir"), SelinuxRelabel: true}},
		{name: "hostPath subPath", vm: v1.VolumeMount{Name: "host", MountPath: "/h", SubPath: "logs"},
			want: &runtimeapi.Mount{ContainerPath: "/h", HostPath: filepath.Join(mustEval(t, host), "logs")}},
		{name: "subPathExpr", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPathExpr: "$(POD)/$(DIR)"},
			env:  []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}, {Name: "DIR", Value: "logs"}},
			want: &runtimeapi.Mount{ContainerPath: "/d", HostPath: filepath.Join(realCache, "p", "logs"), SelinuxRelabel: true}},
		{name: "propagation host to container", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", MountPropagation: ptr(v1.MountPropagationHostToContainer)},
			want: &runtimeapi.Mount{ContainerPath: "/c", HostPath: cache, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, SelinuxRelabel: true}},
		{name: "propagation none", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", MountPropagation: ptr(v1.MountPropagationNone)},
			want: &runtimeapi.Mount{ContainerPath: "/c", HostPath: cache, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE, SelinuxRelabel: true}},
		{name: "bidirectional, privileged", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", MountPropagation: ptr(v1.MountPropagationBidirectional)}, sc: privileged,
			want: &runtimeapi.Mount{ContainerPath: "/c", HostPath: cache, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, SelinuxRelabel: true}},
		{name: "recursive read-only", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)},
			want: &runtimeapi.Mount{ContainerPath: "/c", HostPath: cache, Readonly: true, RecursiveReadOnly: true, SelinuxRelabel: true}},

		{name: "bidirectional, unprivileged", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", MountPropagation: ptr(v1.MountPropagationBidirectional)},
			wantErr: "Bidirectional mount propagation is available only to privileged containers"},
		{name: "subPath with ..", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "a/../../x"}, wantErr: `subPath "a/../../x" must not contain '..'`},
		{name: "absolute subPath", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "/etc"}, wantErr: `subPath "/etc" must be a relative path`},
		{name: "symlink escaping", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "escape"}, wantErr: "symlink escape points outside the volume"},
		{name: "symlink escaping, deeper", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "escape/x"}, wantErr: "symlink escape points outside the volume"},
		{name: "absolute symlink", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "abs"}, wantErr: "points outside the volume"},
		{name: "subPathExpr with ..", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPathExpr: "$(D)"}, env: []v1.EnvVar{{Name: "D", Value: "../.."}},
			wantErr: "must not contain '..'"},
		{name: "subPathExpr from an unsupported source", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPathExpr: "$(IP)"},
			env:     []v1.EnvVar{{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			wantErr: "env IP"},
		{name: "both subPath and subPathExpr", vm: v1.VolumeMount{Name: "cache", MountPath: "/d", SubPath: "a", SubPathExpr: "b"}, wantErr: "mutually exclusive"},
		{name: "relative mountPath", vm: v1.VolumeMount{Name: "cache", MountPath: "c"}, wantErr: `mountPath "c" is not absolute`},
		{name: "unknown volume", vm: v1.VolumeMount{Name: "nope", MountPath: "/c"}, wantErr: `volume not mounted: volume "nope" is not set up`},
		{name: "recursive read-only without read-only", vm: v1.VolumeMount{Name: "cache", MountPath: "/c", RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)}, wantErr: "needs readOnly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{tc.vm}, SecurityContext: tc.sc, Env: tc.env}
			got, err := h.m.Mounts(pod, c)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Contains(t, err.Error(), "container app: volumeMount "+tc.vm.Name)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			if tc.vm.SubPath == "" && tc.vm.SubPathExpr == "" {
				assert.Equal(t, tc.want.String(), got[0].String())
				return
			}
			// A subPath is pinned: the runtime gets the bind mount's
			// target, through which the resolved path shows.
			target := filepath.Join(h.root, "pods", string(pod.UID), "volume-subpaths", tc.vm.Name, "app", "0")
			pinned := tc.want.HostPath
			tc.want.HostPath = target
			assert.Equal(t, tc.want.String(), got[0].String())
			calls := h.mnt.Calls()
			last := calls[len(calls)-1]
			assert.Equal(t, volumetest.MountCall{Op: "mount", Source: last.Source, Target: target, Options: []string{"bind"}, Resolved: pinned}, last)
			assert.Regexp(t, `^/proc/\d+/fd/\d+$`, last.Source)
		})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing created outside the volume")
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

// TestMountsImageVolume: an image volume (upstream's ImageVolume) is set up
// with nothing on the host; its mounts are read-only, without a host path,
// their subPath handed to the runtime as the image's sub path, unpinned.
func TestMountsImageVolume(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p", v1.Volume{Name: "models", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.example/models:v1", PullPolicy: v1.PullIfNotPresent}}})
	require.NoError(t, h.mount(pod))
	hostPaths, err := h.m.VolumeHostPaths(pod)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"models": ""}, hostPaths, "mounted, with nothing on the host")
	_, err = os.Stat(filepath.Join(h.root, "pods", string(pod.UID), "volumes", "kubernetes.io~image"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no volume directory")

	for _, tc := range []struct {
		name    string
		vm      v1.VolumeMount
		env     []v1.EnvVar
		want    *runtimeapi.Mount
		wantErr string
	}{
		{name: "read-only without asking", vm: v1.VolumeMount{Name: "models", MountPath: "/models"},
			want: &runtimeapi.Mount{ContainerPath: "/models", Readonly: true}},
		{name: "subPath is the image's", vm: v1.VolumeMount{Name: "models", MountPath: "/m", SubPath: "llm/weights"},
			want: &runtimeapi.Mount{ContainerPath: "/m", Readonly: true, ImageSubPath: "llm/weights"}},
		{name: "subPathExpr expanded", vm: v1.VolumeMount{Name: "models", MountPath: "/m", SubPathExpr: "$(POD)/$(DIR)"},
			env:  []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}, {Name: "DIR", Value: "x"}},
			want: &runtimeapi.Mount{ContainerPath: "/m", Readonly: true, ImageSubPath: "p/x"}},
		{name: "recursive read-only", vm: v1.VolumeMount{Name: "models", MountPath: "/m", ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)},
			want: &runtimeapi.Mount{ContainerPath: "/m", Readonly: true, RecursiveReadOnly: true}},
		{name: "subPath with ..", vm: v1.VolumeMount{Name: "models", MountPath: "/m", SubPath: "../x"}, wantErr: `subPath "../x" must not contain '..'`},
		{name: "absolute subPath", vm: v1.VolumeMount{Name: "models", MountPath: "/m", SubPath: "/etc"}, wantErr: `subPath "/etc" must be a relative path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.mnt.Calls())
			c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{tc.vm}, Env: tc.env}
			got, err := h.m.Mounts(pod, c)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.want.String(), got[0].String())
			assert.Len(t, h.mnt.Calls(), before, "nothing pinned on the host")
		})
	}
}
