//go:build linux

package hoststats

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Fs is a filesystem's size, in bytes and inodes, as statfs(2) gives it.
type Fs struct {
	// CapacityBytes is the filesystem's size.
	CapacityBytes uint64
	// AvailableBytes are the bytes free for unprivileged users.
	AvailableBytes uint64
	// UsedBytes are the bytes in use (size minus free blocks).
	UsedBytes uint64
	// Inodes, InodesFree and InodesUsed count inodes; Inodes is zero on
	// filesystems that do not report them.
	Inodes, InodesFree, InodesUsed uint64
}

// Statfs measures the filesystem holding path.
func Statfs(path string) (Fs, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return Fs{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(s.Bsize)
	st := Fs{
		CapacityBytes:  s.Blocks * bs,
		AvailableBytes: s.Bavail * bs,
		UsedBytes:      (s.Blocks - s.Bfree) * bs,
		Inodes:         s.Files,
		InodesFree:     s.Ffree,
	}
	if s.Files >= s.Ffree {
		st.InodesUsed = s.Files - s.Ffree
	}
	return st, nil
}

// Device returns the device number of the filesystem holding path.
func Device(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return uint64(st.Dev), nil //nolint:unconvert // Dev is not uint64 on every architecture
}

// SameDevice reports whether a and b are on the same filesystem; when
// either cannot be examined it says they are.
func SameDevice(a, b string) bool {
	da, errA := Device(a)
	db, errB := Device(b)
	return errA != nil || errB != nil || da == db
}

// DiskUsage measures the bytes (allocated blocks) and inodes of path and,
// for a directory, everything under it, without following symbolic links
// or crossing into other filesystems; hard links count once. A path that
// does not exist is zero usage, and unreadable parts are not counted.
func DiskUsage(path string) (bytes, inodes uint64) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, 0
	}
	root, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	if !fi.IsDir() {
		return uint64(root.Blocks) * 512, 1
	}
	dev := uint64(root.Dev) //nolint:unconvert // Dev is not uint64 on every architecture
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		sys, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if uint64(sys.Dev) != dev { //nolint:unconvert // as above
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		key := [2]uint64{uint64(sys.Dev), sys.Ino} //nolint:unconvert // as above
		if seen[key] {
			return nil
		}
		seen[key] = true
		bytes += uint64(sys.Blocks) * 512
		inodes++
		return nil
	})
	return bytes, inodes
}
