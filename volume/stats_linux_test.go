package volume_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

// TestMeasureLocalVolumeStatfs: on Linux a local volume is measured by
// statfs(2) of its directory: its capacity and inodes are the
// filesystem's (the fake mounter mounts nothing, so the filesystem of
// the test's root directory).
func TestMeasureLocalVolumeStatfs(t *testing.T) {
	src := &volume.StaticSources{}
	h := newHarness(t, func(o *volume.Options) { o.Sources.Claims = src }).run()
	c, pv := boundClaim("claim", "local-pv", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	src.SetPersistentVolumeClaim(c)
	src.SetPersistentVolume(pv)
	pod := claimPod(false)
	require.NoError(t, h.mount(pod))

	got := h.m.MeasureVolumes(context.Background(), pod.UID)
	require.Len(t, got, 1)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(h.volDir(pod, volume.LocalPluginName, "local-pv"), &st))
	fs := got[0].FsStats
	assert.Equal(t, st.Blocks*uint64(st.Bsize), *fs.CapacityBytes)
	assert.Equal(t, st.Files, *fs.Inodes)
	assert.LessOrEqual(t, *fs.AvailableBytes, *fs.CapacityBytes)
	assert.LessOrEqual(t, *fs.UsedBytes, *fs.CapacityBytes)
	assert.Equal(t, *fs.Inodes-*fs.InodesFree, *fs.InodesUsed)
	require.NoError(t, h.unmount(pod))
}
