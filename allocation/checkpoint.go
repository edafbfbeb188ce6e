package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

// checkpointVersion is the version of the checkpoint's format.
const checkpointVersion = 1

// checkpoint is the file's content: {"version":1,"pods":{UID:{container:
// resources}},"podLevel":{UID:resources}}. PodLevel, the pod-level
// resources of the pods that set them, is left out when no pod does, so a
// checkpoint written before it existed reads the same.
type checkpoint struct {
	Version  int                                    `json:"version"`
	Pods     map[types.UID]podAllocation            `json:"pods"`
	PodLevel map[types.UID]*v1.ResourceRequirements `json:"podLevel,omitempty"`
}

// Load reads the checkpoint, if Options.CheckpointPath names one that
// exists, in place of the allocations the Manager holds: a restarted node
// runs its pods with what it had allocated, and takes a resize asked
// meanwhile as a resize. Call it once, before the first pod is admitted.
// A checkpoint that cannot be read or has another version is an error.
func (m *Manager) Load() error {
	if m.path == "" {
		return nil
	}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("allocation checkpoint: %w", err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return fmt.Errorf("allocation checkpoint %s: %w", m.path, err)
	}
	if cp.Version != checkpointVersion {
		return fmt.Errorf("allocation checkpoint %s: version %d, want %d", m.path, cp.Version, checkpointVersion)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.allocs = cp.Pods
	if m.allocs == nil {
		m.allocs = map[types.UID]podAllocation{}
	}
	m.podLevel = cp.PodLevel
	if m.podLevel == nil {
		m.podLevel = map[types.UID]*v1.ResourceRequirements{}
	}
	m.dirty = false
	m.log.Debug("Allocation checkpoint read", "path", m.path, "pods", len(m.allocs))
	return nil
}

// saveLocked writes the checkpoint. A checkpoint that cannot be written
// costs only the resizes taken since the last one, after a restart: the
// failure is logged, not returned.
func (m *Manager) saveLocked() {
	m.dirty = false
	if m.path == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(m.path), 0o750)
	if err == nil {
		err = atomicfile.WriteJSON(m.path, checkpoint{Version: checkpointVersion, Pods: m.allocs, PodLevel: m.podLevel})
	}
	if err != nil {
		m.log.Warn("Cannot write the allocation checkpoint", "path", m.path, "err", err)
	}
}
