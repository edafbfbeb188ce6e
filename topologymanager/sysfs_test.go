package topologymanager_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

func TestReadDistances(t *testing.T) {
	root := t.TempDir()
	for n, d := range []string{"10 21\n", "21 10\n"} {
		dir := filepath.Join(root, "devices/system/node", "node"+string(rune('0'+n)))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "distance"), []byte(d), 0o644))
	}
	got, err := topologymanager.ReadDistances(root, []int{0, 1})
	require.NoError(t, err)
	assert.Equal(t, map[int][]int{0: {10, 21}, 1: {21, 10}}, got)
	_, err = topologymanager.ReadDistances(root, []int{2})
	assert.Error(t, err)
	// This machine's own.
	_, err = topologymanager.ReadDistances("/sys", []int{0})
	assert.NoError(t, err)
}
