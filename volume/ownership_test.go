package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestSetOwnershipPolicies(t *testing.T) {
	gid := int64(os.Getgid())
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "link")))

	require.NoError(t, setOwnership(dir, &gid, v1.FSGroupChangeAlways, false))
	assert.Equal(t, fs.FileMode(0o660), mode(t, file), "group read-write added")
	assert.NotZero(t, mode(t, dir)&fs.ModeSetgid)

	// OnRootMismatch: the root is right, so a file changed since is left.
	require.NoError(t, os.Chmod(file, 0o600))
	require.NoError(t, setOwnership(dir, &gid, v1.FSGroupChangeOnRootMismatch, false))
	assert.Equal(t, fs.FileMode(0o600), mode(t, file))
	// Always walks again; read-only volumes get only group read.
	require.NoError(t, setOwnership(dir, &gid, v1.FSGroupChangeAlways, true))
	assert.Equal(t, fs.FileMode(0o640), mode(t, file))
	// No fsGroup, nothing.
	require.NoError(t, os.Chmod(file, 0o600))
	require.NoError(t, setOwnership(dir, nil, v1.FSGroupChangeAlways, false))
	assert.Equal(t, fs.FileMode(0o600), mode(t, file))
}

func TestPodFSGroup(t *testing.T) {
	g := int64(7)
	root := v1.FSGroupChangeOnRootMismatch
	got, policy := podFSGroup(&v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: &g}}})
	assert.Equal(t, &g, got)
	assert.Equal(t, v1.FSGroupChangeAlways, policy, "upstream's default")
	_, policy = podFSGroup(&v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: &g, FSGroupChangePolicy: &root}}})
	assert.Equal(t, root, policy)
	got, _ = podFSGroup(&v1.Pod{})
	assert.Nil(t, got)
	got, _ = podFSGroup(nil)
	assert.Nil(t, got)
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode() & (fs.ModePerm | fs.ModeSetgid)
}
