//go:build !linux

package stats

import (
	"fmt"
	"runtime"

	"k8s.io/utils/clock"
)

// defaultHost: there is no measurement of a machine that is not Linux.
func defaultHost(clock.PassiveClock) (Host, error) {
	return nil, fmt.Errorf("%w: no default host for %s, set Options.Host", ErrMissingHost, runtime.GOOS)
}
