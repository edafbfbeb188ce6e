//go:build !linux

package logs

import (
	"errors"
	"fmt"
)

// newWatcher has no inotify to offer outside Linux: the follower polls.
func newWatcher(dir string) (watcher, error) {
	return nil, fmt.Errorf("watch directory %q: %w", dir, errors.ErrUnsupported)
}
