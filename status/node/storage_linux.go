//go:build linux

package node

import (
	"os"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// storageCapacity is the size of the filesystem holding dir, or of its
// nearest ancestor that exists (the agent's root directory may not exist
// until it starts).
func storageCapacity(dir string) (int64, error) {
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	fs, err := hoststats.Statfs(dir)
	if err != nil {
		return 0, err
	}
	return int64(fs.CapacityBytes), nil //nolint:gosec // a filesystem's size fits
}
