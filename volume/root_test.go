//go:build root

package volume_test

// Tests that mount tmpfs and bind-mount subPaths for real; they need root
// (CAP_SYS_ADMIN):
//
//	go test -tags root -race ./volume/...

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

// mountLine returns the /proc/self/mounts line of target, or "".
func mountLine(t *testing.T, target string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == target {
			return l
		}
	}
	return ""
}

func TestRootTmpfs(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "the root tests run as root")
	h := newHarness(t, func(o *volume.Options) { o.Mounter = nil }).run() // the real mounter
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"password": []byte("hunter2")}})
	pod := newPod("p",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("16Mi"))}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr(int32(0o400))}}},
	)
	require.NoError(t, h.mount(pod))
	mem, err := filepath.EvalSymlinks(h.volDir(pod, volume.EmptyDirPluginName, "mem"))
	require.NoError(t, err)
	sec, err := filepath.EvalSymlinks(h.volDir(pod, volume.SecretPluginName, "sec"))
	require.NoError(t, err)

	l := mountLine(t, mem)
	require.NotEmpty(t, l, "emptyDir medium Memory is a tmpfs")
	assert.Contains(t, l, "tmpfs")
	assert.Contains(t, l, "size=16384k")
	assert.Contains(t, l, "nosuid")
	assert.Contains(t, l, "nodev")
	require.NotEmpty(t, mountLine(t, sec), "secrets are on a tmpfs")
	assert.Equal(t, "hunter2", readFile(t, filepath.Join(sec, "password")))
	fi, err := os.Stat(filepath.Join(sec, "password"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())

	// A restarted manager finds the mounts and does not mount again.
	h.stop()
	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir, o.Mounter = h.root, nil
		o.Sources = volume.Sources{Secrets: h.src}
	})
	h2.root = h.root
	h2.run()
	require.NoError(t, h2.mount(pod))
	assert.Equal(t, 1, strings.Count(mountsText(t), mem+" "), "mounted once")

	require.NoError(t, h2.unmount(pod))
	assert.Empty(t, mountLine(t, mem))
	assert.Empty(t, mountLine(t, sec))
	assert.False(t, exists(mem))
	assert.False(t, exists(sec))
}

func mountsText(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	return string(b)
}

// TestRootSubPathPin pins subPaths with real bind mounts: what a
// container gets is what was checked, even when the volume changes after,
// a restart reuses the pin, a rewritten configMap key is pinned anew, and
// the teardown unmounts everything.
func TestRootSubPathPin(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "the root tests run as root")
	h := newHarness(t, func(o *volume.Options) { o.Mounter = nil }).run() // the real mounter
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"app.conf": "v1"}})
	pod := newPod("p",
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
	)
	require.NoError(t, h.mount(pod))
	data := h.volDir(pod, volume.EmptyDirPluginName, "data")
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "data", MountPath: "/logs", SubPath: "logs"},
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
	}}
	got, err := h.m.Mounts(pod, c)
	require.NoError(t, err)
	logs, conf := got[0].HostPath, got[1].HostPath
	subpaths := volume.PodSubPathsDir(h.root, pod.UID)
	require.Equal(t, filepath.Join(subpaths, "data", "app", "0"), logs)
	require.Equal(t, filepath.Join(subpaths, "cfg", "app", "1"), conf)
	require.NoError(t, os.WriteFile(filepath.Join(data, "logs", "x"), []byte("mine"), 0o644))
	assert.Equal(t, "mine", readFile(t, filepath.Join(logs, "x")), "the pin shows the subPath")
	assert.Equal(t, "v1", readFile(t, conf))

	// A restarted container reuses its pins.
	_, err = h.m.Mounts(pod, c)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(mountsText(t), " "+logs+" "), "pinned once")
	assert.Equal(t, 1, strings.Count(mountsText(t), " "+conf+" "))

	// The container swaps its subPath for a symlink to the host: the pin
	// still shows what was checked, and a new pin is refused.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "x"), []byte("host"), 0o644))
	require.NoError(t, os.Rename(filepath.Join(data, "logs"), filepath.Join(data, "old")))
	require.NoError(t, os.Symlink(outside, filepath.Join(data, "logs")))
	assert.Equal(t, "mine", readFile(t, filepath.Join(logs, "x")))
	_, err = h.m.Mounts(pod, c)
	var se *volume.SubPathError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, `failed to prepare subPath for volumeMount "data" of container "app"`, se.StatusMessage())
	require.NoError(t, os.Remove(filepath.Join(data, "logs")))
	require.NoError(t, os.Rename(filepath.Join(data, "old"), filepath.Join(data, "logs")))

	// A rewritten key is another file: the next start pins it instead.
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"app.conf": "v2"}})
	require.True(t, h.m.Refresh(pod))
	cfg := h.volDir(pod, volume.ConfigMapPluginName, "cfg")
	waitFor(t, "the configMap to be rewritten", func() bool {
		b, _ := os.ReadFile(filepath.Join(cfg, "app.conf"))
		return string(b) == "v2"
	})
	assert.Equal(t, "v1", readFile(t, conf), "a running container keeps its file, as upstream")
	_, err = h.m.Mounts(pod, c)
	require.NoError(t, err)
	assert.Equal(t, "v2", readFile(t, conf))
	assert.Equal(t, 1, strings.Count(mountsText(t), " "+conf+" "), "replaced, not stacked")

	require.NoError(t, h.unmount(pod))
	assert.NotContains(t, mountsText(t), subpaths)
	assert.False(t, exists(subpaths))
	assert.False(t, exists(data))
}
