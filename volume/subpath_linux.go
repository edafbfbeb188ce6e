package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// pinSupported says whether pinSubPath can work here.
const pinSupported = true

// pinnedPath is a path opened with O_PATH: a handle on the file itself,
// which no later rename or symlink can redirect.
type pinnedPath struct {
	fd       int
	dir      bool
	dev, ino uint64
}

// resolveSubPath resolves sub (relative, free of "..") inside the volume
// at base, holding a file descriptor at every step so that nothing a
// container does to the volume meanwhile can lead it outside: each element
// is opened with openat(O_PATH|O_NOFOLLOW) relative to the one before. A
// symlink is followed only when its target, resolved against the real
// volume path, stays inside the volume; the walk then goes on from the
// root to that target, again without following anything. A missing
// element is created with mkdirat when create is true, with the volume
// root's mode set by fchmod (umask does not apply; setgid is kept). It
// returns the open handle and the real path it was reached by.
func resolveSubPath(base, sub string, create bool) (*pinnedPath, string, error) {
	root, err := filepath.EvalSymlinks(base)
	if err != nil {
		return nil, "", fmt.Errorf("volume path %s: %w", base, err)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open volume %s: %w", base, err)
	}
	var rootSt unix.Stat_t
	if err := unix.Fstat(fd, &rootSt); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("stat volume %s: %w", base, err)
	}
	dirMode := rootSt.Mode & (0o777 | unix.S_ISGID | unix.S_ISUID | unix.S_ISVTX)
	cur := root
	for _, el := range strings.Split(filepath.Clean(sub), string(filepath.Separator)) {
		if el == "." || el == "" {
			continue
		}
		if el == ".." {
			unix.Close(fd)
			return nil, "", fmt.Errorf("%w: subPath %q must not contain '..'", ErrInvalidVolume, sub)
		}
		next := filepath.Join(cur, el)
		var st unix.Stat_t
		err := unix.Fstatat(fd, el, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
			if !create {
				unix.Close(fd)
				return nil, "", fmt.Errorf("%w: subPath %q does not exist in the volume", ErrInvalidVolume, sub)
			}
			err = mkdirAt(fd, el, dirMode)
		case err != nil:
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			unix.Close(fd)
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return nil, "", fmt.Errorf("%w: subPath %q: symlink %s: %w", ErrInvalidVolume, sub, el, err)
			}
			if !within(root, target) {
				return nil, "", fmt.Errorf("%w: subPath %q: symlink %s points outside the volume", ErrInvalidVolume, sub, el)
			}
			p, err := openNoFollow(root, target)
			if err != nil {
				return nil, "", fmt.Errorf("subPath %q: %w", sub, err)
			}
			// A file must be the last element: with more to come,
			// the next fstatat fails with ENOTDIR.
			fd, cur = p.fd, target
			continue
		}
		if err != nil {
			unix.Close(fd)
			return nil, "", fmt.Errorf("subPath %q: %s: %w", sub, el, err)
		}
		nfd, err := unix.Openat(fd, el, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil, "", fmt.Errorf("subPath %q: open %s: %w", sub, el, err)
		}
		fd, cur = nfd, next
	}
	p, err := handle(fd, cur)
	if err != nil {
		return nil, "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	return p, cur, nil
}

// mkdirAt creates the directory name in dirfd with mode, exactly: the
// mode is set again through a descriptor of the new directory opened
// without following symlinks, so a swap after mkdirat cannot redirect the
// chmod. A directory that appeared meanwhile is kept as it is.
func mkdirAt(dirfd int, name string, mode uint32) error {
	if err := unix.Mkdirat(dirfd, name, mode&0o777); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil
		}
		return err
	}
	d, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	return unix.Fchmod(d, mode)
}

// openNoFollow opens p, a real path inside the real directory root, from
// root on, element by element with openat(O_PATH|O_NOFOLLOW): every
// element but the last must be a directory and none may be a symlink.
func openNoFollow(root, p string) (*pinnedPath, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%w: %s is outside the volume", ErrInvalidVolume, p)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open volume %s: %w", root, err)
	}
	cur := root
	if rel != "." {
		for _, el := range strings.Split(rel, "/") {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				unix.Close(fd)
				return nil, fmt.Errorf("%w: %s is no longer a directory", ErrInvalidVolume, cur)
			}
			cur = filepath.Join(cur, el)
			next, err := unix.Openat(fd, el, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return nil, fmt.Errorf("open %s: %w", cur, err)
			}
			fd = next
		}
	}
	return handle(fd, cur)
}

// handle makes a pinnedPath of fd, refusing a symlink (O_PATH|O_NOFOLLOW
// opens the link itself); it closes fd on error.
func handle(fd int, path string) (*pinnedPath, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s became a symlink", ErrInvalidVolume, path)
	}
	return &pinnedPath{fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, dev: st.Dev, ino: st.Ino}, nil
}

// source is the path a bind mount takes to mount the opened file itself.
func (p *pinnedPath) source() string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), p.fd)
}

// sameAs reports whether target (a mount point) shows the opened file.
func (p *pinnedPath) sameAs(target string) bool {
	var st unix.Stat_t
	if err := unix.Stat(target, &st); err != nil {
		return false
	}
	return st.Dev == p.dev && st.Ino == p.ino
}

func (p *pinnedPath) close() { unix.Close(p.fd) }
