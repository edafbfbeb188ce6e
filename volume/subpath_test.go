package volume_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

// TestSubPathErrors checks which of upstream's two messages a subPath that
// cannot be made ready gets: "create" when it did not exist (as the host
// sees it, symlinks followed), "prepare" when it did.
func TestSubPathErrors(t *testing.T) {
	h := newHarness(t, nil).run()
	outside := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(outside, "etc"), 0o755))
	pod := newPod("p", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	require.NoError(t, h.mount(pod))
	data := h.volDir(pod, volume.EmptyDirPluginName, "data")
	require.NoError(t, os.Symlink(outside, filepath.Join(data, "escape")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(data, "dangling")))
	require.NoError(t, os.WriteFile(filepath.Join(data, "file"), nil, 0o644))

	const (
		prepare = `failed to prepare subPath for volumeMount "data" of container "app"`
		create  = `failed to create subPath directory for volumeMount "data" of container "app"`
	)
	for _, tc := range []struct {
		sub, want, detail string
	}{
		{"escape", prepare, "symlink escape points outside the volume"},
		{"escape/etc", prepare, "symlink escape points outside the volume"},
		{"escape/new", create, "symlink escape points outside the volume"},
		{"dangling", create, "symlink dangling"},
		{"file/below", prepare, "not a directory"}, // ENOTDIR is not "missing"
	} {
		t.Run(tc.sub, func(t *testing.T) {
			c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: tc.sub}}}
			_, err := h.m.Mounts(pod, c)
			var se *volume.SubPathError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.want, se.StatusMessage())
			assert.ErrorContains(t, err, tc.detail)
		})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing created outside the volume")
	assert.Empty(t, h.mnt.Mounted(), "nothing pinned")
}

// TestSubPathPins follows a pinned subPath through a container restart, a
// failed mount and the pod's teardown.
func TestSubPathPins(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p",
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "other", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	)
	require.NoError(t, h.mount(pod))
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "other", MountPath: "/o"},
		{Name: "data", MountPath: "/logs", SubPath: "logs"},
		{Name: "data", MountPath: "/conf", SubPath: "conf/app"},
	}}
	got, err := h.m.Mounts(pod, c)
	require.NoError(t, err)
	subpaths := volume.PodSubPathsDir(h.root, pod.UID)
	assert.Equal(t, h.volDir(pod, volume.EmptyDirPluginName, "other"), got[0].HostPath, "no subPath, no pin")
	assert.Equal(t, filepath.Join(subpaths, "data", "app", "1"), got[1].HostPath)
	assert.Equal(t, filepath.Join(subpaths, "data", "app", "2"), got[2].HostPath)
	assert.Len(t, h.mnt.Mounted(), 2)

	// Created as upstream: the volume root's mode, whatever the umask.
	fi, err := os.Stat(filepath.Join(h.volDir(pod, volume.EmptyDirPluginName, "data"), "conf", "app"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o777, fi.Mode())

	// A restart pins again (the fake's targets never show the source, so
	// it cannot be kept); nothing is mounted twice.
	_, err = h.m.Mounts(pod, c)
	require.NoError(t, err)
	assert.Len(t, h.mnt.Mounted(), 2)

	// A failed bind fails the mount and leaves no target behind.
	h.mnt.SetMountErr(errors.New("permission denied"))
	c2 := &v1.Container{Name: "side", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/logs", SubPath: "logs"}}}
	_, err = h.m.Mounts(pod, c2)
	var se *volume.SubPathError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, `failed to prepare subPath for volumeMount "data" of container "side"`, se.StatusMessage())
	assert.NoFileExists(t, filepath.Join(subpaths, "data", "side", "0"))
	h.mnt.SetMountErr(nil)

	// Teardown: a pin that cannot be unmounted keeps its volume.
	h.mnt.SetUnmountErr(errors.New("device busy"))
	h.m.RemovePod(pod.UID)
	data := h.volDir(pod, volume.EmptyDirPluginName, "data")
	waitFor(t, "an unmount attempt", func() bool {
		for _, c := range h.mnt.Calls() {
			if c.Op == "unmount" && filepath.Dir(filepath.Dir(c.Target)) == filepath.Join(subpaths, "data") {
				return true
			}
		}
		return false
	})
	waitFor(t, "the operations in flight to end", func() bool { return volume.Busy(h.m) == 0 })
	assert.DirExists(t, filepath.Join(data, "logs"), "a volume is not torn down under its pins")
	h.mnt.SetUnmountErr(nil)
	res := make(chan error, 1)
	go func() { res <- h.unmount(pod) }()
	h.clk.Step(time.Second) // past the backoff
	require.NoError(t, <-res)
	assert.Empty(t, h.mnt.Mounted())
	assert.NoDirExists(t, subpaths)
	assert.NoDirExists(t, data)
}

func TestUnpinnedSubPaths(t *testing.T) {
	h := newHarness(t, func(o *volume.Options) { o.UnpinnedSubPaths = true }).run()
	pod := newPod("p", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	require.NoError(t, h.mount(pod))
	got, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/logs", SubPath: "logs"}}})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(mustEval(t, h.volDir(pod, volume.EmptyDirPluginName, "data")), "logs"), got[0].HostPath)
	assert.Empty(t, h.mnt.Calls())
}
