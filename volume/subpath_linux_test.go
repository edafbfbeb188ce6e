package volume

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenNoFollowRefusesSwaps swaps each element of a resolved path for a
// symlink to the same shape outside the volume, as a container racing the
// pin would: the open must fail, never reach outside.
func TestOpenNoFollowRefusesSwaps(t *testing.T) {
	for _, swap := range []string{"a", "a/b", "a/b/f"} {
		t.Run(swap, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			for _, d := range []string{root, outside} {
				require.NoError(t, os.MkdirAll(filepath.Join(d, "a", "b"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(d, "a", "b", "f"), []byte(d), 0o644))
			}
			p, err := openNoFollow(root, filepath.Join(root, "a", "b", "f"))
			require.NoError(t, err)
			assert.False(t, p.dir)
			p.close()

			require.NoError(t, os.RemoveAll(filepath.Join(root, swap)))
			require.NoError(t, os.Symlink(filepath.Join(outside, swap), filepath.Join(root, swap)))
			_, err = openNoFollow(root, filepath.Join(root, "a", "b", "f"))
			require.ErrorIs(t, err, ErrInvalidVolume)
		})
	}
	_, err := openNoFollow(t.TempDir(), "/etc")
	assert.ErrorContains(t, err, "outside the volume")
}

// TestMkdirAtMode: created directories get the volume root's mode exactly,
// setgid included, whatever the umask.
func TestMkdirAtMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o2775|os.ModeSetgid))
	p, resolved, err := resolveSubPath(base, "x/y", true)
	require.NoError(t, err)
	p.close()
	assert.Equal(t, filepath.Join(mustReal(t, base), "x", "y"), resolved)
	for _, d := range []string{"x", "x/y"} {
		fi, err := os.Stat(filepath.Join(base, d))
		require.NoError(t, err)
		assert.Equal(t, os.ModeDir|os.ModeSetgid|0o775, fi.Mode(), d)
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func TestRemoveIfEmpty(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	require.NoError(t, os.MkdirAll(filepath.Join(full, "x"), 0o750))
	empty := filepath.Join(root, "empty")
	require.NoError(t, os.Mkdir(empty, 0o750))
	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	require.NoError(t, removeIfEmpty(empty))
	assert.NoDirExists(t, empty)
	require.NoError(t, removeIfEmpty(empty), "gone already: another volume's tear down removed it")
	require.NoError(t, removeIfEmpty(full), "not empty: another volume still has pins")
	assert.DirExists(t, full)
	assert.ErrorIs(t, removeIfEmpty(filepath.Join(file, "x")), syscall.ENOTDIR, "any other error is told")
}
