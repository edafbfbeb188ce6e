package atomicfile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	require.NoError(t, atomicfile.WriteJSON(path, map[string]int{"a": 1}))
	require.NoError(t, atomicfile.WriteJSON(path, map[string]int{"a": 2}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var got map[string]int
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, 2, got["a"])
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	assert.Error(t, atomicfile.WriteJSON(filepath.Join(dir, "missing", "state"), 1))
	assert.Error(t, atomicfile.WriteJSON(path, func() {}), "a value JSON cannot hold")
	b2, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, b2, "a failed write leaves the file as it was")
}

func ExampleWriteJSON() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "checkpoint")
	_ = atomicfile.WriteJSON(path, map[string]string{"version": "v1"})
	b, _ := os.ReadFile(path)
	os.Stdout.Write(b)
	// Output: {"version":"v1"}
}
