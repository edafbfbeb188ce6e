package pluginmanager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Scan finds the plugin sockets under dir and its subdirectories: unix
// sockets whose names, and whose directories' names, do not start with
// "." (upstream's watcher skips those). A directory that does not exist
// holds none. Each socket's ID is its device, inode and change time, so
// that a socket removed and created again at the same path has another.
func Scan(dir string) (map[string]Socket, error) {
	out := map[string]Socket{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while walking, or no directory at all
			}
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSocket == 0 {
			return nil
		}
		info, err := os.Lstat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out[path] = Socket{Path: path, ID: socketID(info)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan plugin registry %s: %w", dir, err)
	}
	return out, nil
}

// socketID is a socket file's identity: its device and inode, and its
// change time, since a new socket may get the old one's inode.
func socketID(info fs.FileInfo) string {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d:%d.%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return info.ModTime().String()
}
