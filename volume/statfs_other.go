//go:build !linux

package volume

import "fmt"

// statfs is not implemented outside Linux: local volumes are not
// measured there.
func statfs(string) (statFS, error) {
	return statFS{}, fmt.Errorf("%w: statfs outside Linux", ErrMetricsNotSupported)
}
