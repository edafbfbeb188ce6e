//go:build !linux

package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// pinnedPath holds nothing outside Linux, where subPaths cannot be pinned
// and need Options.UnpinnedSubPaths.
type pinnedPath struct{ dir bool }

// pinSupported says whether pinSubPath can work here.
const pinSupported = false

// resolveSubPath is ResolveSubPath on paths: each element is checked with
// Lstat, which a concurrent swap can outrun.
func resolveSubPath(base, sub string, create bool) (*pinnedPath, string, error) {
	root, err := filepath.EvalSymlinks(base)
	if err != nil {
		return nil, "", fmt.Errorf("volume path %s: %w", base, err)
	}
	rootInfo, err := os.Stat(root)
	if err != nil {
		return nil, "", fmt.Errorf("volume path %s: %w", base, err)
	}
	cur := root
	for _, el := range strings.Split(filepath.Clean(sub), string(filepath.Separator)) {
		if el == "." || el == "" {
			continue
		}
		if el == ".." {
			return nil, "", fmt.Errorf("%w: subPath %q must not contain '..'", ErrInvalidVolume, sub)
		}
		next := filepath.Join(cur, el)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !create {
				return nil, "", fmt.Errorf("%w: subPath %q does not exist in the volume", ErrInvalidVolume, sub)
			}
			if err := os.Mkdir(next, rootInfo.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, "", fmt.Errorf("subPath %q: %w", sub, err)
			}
			// Look again: something may have raced the Mkdir.
			if fi, err = os.Lstat(next); err != nil {
				return nil, "", fmt.Errorf("subPath %q: %w", sub, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
				return nil, "", fmt.Errorf("%w: subPath %q: %s changed while it was created", ErrInvalidVolume, sub, el)
			}
		case err != nil:
			return nil, "", fmt.Errorf("subPath %q: %w", sub, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return nil, "", fmt.Errorf("%w: subPath %q: symlink %s: %w", ErrInvalidVolume, sub, el, err)
			}
			if !within(root, target) {
				return nil, "", fmt.Errorf("%w: subPath %q: symlink %s points outside the volume", ErrInvalidVolume, sub, el)
			}
			next = target
		}
		cur = next
	}
	if !within(root, cur) {
		return nil, "", fmt.Errorf("%w: subPath %q resolves outside the volume", ErrInvalidVolume, sub)
	}
	return &pinnedPath{}, cur, nil
}

func (p *pinnedPath) source() string     { return "" }
func (p *pinnedPath) sameAs(string) bool { return false }
func (p *pinnedPath) close()             {}
