//go:build !linux

package source

import (
	"errors"
	"fmt"
)

// newInotify has no inotify to offer outside Linux: the file source polls.
func newInotify(path string) (watcher, error) {
	return nil, fmt.Errorf("watch %s: %w", path, errors.ErrUnsupported)
}
