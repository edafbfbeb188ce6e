//go:build !linux

package agent

import (
	"errors"
	"runtime"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// machineStats has no measurement of a machine that is not Linux.
func (b *blocks) machineStats() (stats.Provider, error) {
	return nil, errors.New("no stats provider for " + runtime.GOOS + ": set EvictionOptions.Stats, or Disabled")
}
