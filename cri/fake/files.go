package fake

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MaxContainerFiles bounds the bytes of file content a container's own files
// (those tar and mkdir write, see the package doc) may hold; a write past it
// fails with "No space left on device".
const MaxContainerFiles = 64 << 20

// skeleton is the directories every container starts with: those at the
// root of a busybox image's filesystem, empty (what /proc or /etc would hold
// is unknown to the fake).
var skeleton = []string{"/", "/bin", "/dev", "/etc", "/home", "/lib", "/proc", "/root", "/sys", "/tmp", "/usr", "/var"}

// files is a container's own files: the skeleton directories and what tar
// and mkdir wrote. It lives in memory and never touches the host; the
// container's mounts are read through to the host instead (see place).
type files struct {
	mu    sync.Mutex
	nodes map[string]*fileNode // by clean absolute path
	size  int64
}

// fileNode is one file, directory or symbolic link.
type fileNode struct {
	mode  fs.FileMode // type bits and permissions
	data  []byte
	link  string // a symbolic link's target
	mtime time.Time
}

func newFiles(now time.Time) *files {
	f := &files{nodes: make(map[string]*fileNode, len(skeleton))}
	for _, d := range skeleton {
		f.nodes[d] = &fileNode{mode: fs.ModeDir | 0o755, mtime: now}
	}
	f.nodes["/tmp"].mode = fs.ModeDir | fs.ModeSticky | 0o777
	return f
}

// Errors of file operations; their texts are the strerror texts busybox
// prints, but for errMountWrite, which says what the fake declines.
var (
	errNoEntry = syscall.ENOENT
	errExists  = syscall.EEXIST
	errNotDir  = syscall.ENOTDIR
	errIsDir   = syscall.EISDIR
	errNoSpace = syscall.ENOSPC
	// errMountWrite: a write under a mount, which would write a host file.
	errMountWrite = errors.New("the fake runtime does not write to mounts")
)

// cleanPath is p as an absolute, clean path inside the container, relative
// paths being relative to the root (every command runs in /). A path that
// climbs above the root stays at the root, as in any filesystem.
func cleanPath(p string) string { return path.Clean("/" + p) }

// stat returns the node at p, a clean absolute path.
func (f *files) stat(p string) (fileNode, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[p]
	if !ok {
		return fileNode{}, false
	}
	return *n, true
}

// mkdir creates the directory p; with parents, its missing parents too and
// an existing directory is no error.
func (f *files) mkdir(p string, mode fs.FileMode, now time.Time, parents bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[p]; ok {
		if parents && n.mode.IsDir() {
			return nil
		}
		return errExists
	}
	if err := f.parentLocked(p, now, parents); err != nil {
		return err
	}
	f.nodes[p] = &fileNode{mode: fs.ModeDir | mode.Perm(), mtime: now}
	return nil
}

// parentLocked checks that p's parent is a directory, creating it and its
// own parents when create is set.
func (f *files) parentLocked(p string, now time.Time, create bool) error {
	dir := path.Dir(p)
	var missing []string
	for ; ; dir = path.Dir(dir) {
		n, ok := f.nodes[dir]
		if ok {
			if !n.mode.IsDir() {
				return errNotDir
			}
			break
		}
		if !create {
			return errNoEntry
		}
		missing = append(missing, dir)
	}
	for _, d := range slices.Backward(missing) {
		f.nodes[d] = &fileNode{mode: fs.ModeDir | 0o755, mtime: now}
	}
	return nil
}

// put stores n at p, creating p's missing parent directories (tar creates
// them). A directory over a directory only updates its mode; anything over
// a directory, or a directory over anything else, fails as tar fails.
func (f *files) put(p string, n fileNode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, exists := f.nodes[p]
	switch {
	case exists && old.mode.IsDir() && n.mode.IsDir():
		old.mode, old.mtime = n.mode, n.mtime
		return nil
	case exists && old.mode.IsDir():
		return errIsDir
	case exists && n.mode.IsDir():
		return errExists
	}
	grow := int64(len(n.data))
	if exists {
		grow -= int64(len(old.data))
	}
	if f.size+grow > MaxContainerFiles {
		return errNoSpace
	}
	if p == "/" {
		return errExists
	}
	if err := f.parentLocked(p, n.mtime, true); err != nil {
		return err
	}
	f.size += grow
	f.nodes[p] = &n
	return nil
}

// walk calls fn for p and, when it is a directory, everything under it, in
// lexical order of path, as tar archives a tree. It stops at fn's first
// error.
func (f *files) walk(p string, fn func(p string, n fileNode) error) error {
	f.mu.Lock()
	var paths []string
	prefix := strings.TrimSuffix(p, "/") + "/"
	for q := range f.nodes {
		if q == p || strings.HasPrefix(q, prefix) {
			paths = append(paths, q)
		}
	}
	slices.Sort(paths)
	nodes := make([]fileNode, len(paths))
	for i, q := range paths {
		nodes[i] = *f.nodes[q]
	}
	f.mu.Unlock()
	for i, q := range paths {
		if err := fn(q, nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

// place is where a container path lives: on the host behind one of the
// container's mounts, or (mount false) among the container's own files.
// Under a mount of an image (image set), it is in the image, whose content
// the fake does not know.
type place struct {
	mount bool
	image bool
	host  string // the host path behind the mount, not yet resolved
	root  string // the mount's host path
}

// locate finds where the container path p (clean, absolute) lives: behind
// the mount with the longest container path that contains it, or else among
// the container's own files.
func locate(mounts []*runtimeapi.Mount, p string) place {
	var best *runtimeapi.Mount
	bestLen := -1
	for _, m := range mounts {
		cp := path.Clean(m.GetContainerPath())
		if (p == cp || strings.HasPrefix(p, strings.TrimSuffix(cp, "/")+"/")) && len(cp) > bestLen {
			best, bestLen = m, len(cp)
		}
	}
	if best == nil {
		return place{}
	}
	if best.GetImage() != nil {
		return place{mount: true, image: true}
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, path.Clean(best.GetContainerPath())), "/")
	return place{mount: true, host: filepath.Join(best.GetHostPath(), filepath.FromSlash(rel)), root: best.GetHostPath()}
}

// resolve returns the host path behind a mount with its symbolic links
// resolved, refusing (as missing) one that they lead out of the mount's host
// path: a container sees nothing outside its mounts.
func (pl place) resolve() (string, error) {
	if pl.image {
		// An image's files are not the fake's to know (as a path that is
		// no mount and none of the container's own): never a host path.
		return "", errUnknownFile
	}
	real, err := filepath.EvalSymlinks(pl.host)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(pl.root)
	if err != nil {
		return "", err
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return "", fs.ErrNotExist
	}
	return real, nil
}

// statPath reports what the container sees at p (clean, absolute): through
// a mount, the host file's mode and size; otherwise the container's own
// file's. A missing path is an error wrapping fs.ErrNotExist; mount says
// whether p is under a mount (a missing path that is not is one the fake
// does not know: see the package doc).
func statPath(mounts []*runtimeapi.Mount, own *files, p string) (mode fs.FileMode, size int64, mount bool, err error) {
	pl := locate(mounts, p)
	if !pl.mount {
		n, ok := own.stat(p)
		if !ok {
			return 0, 0, false, fs.ErrNotExist
		}
		return n.mode, int64(len(n.data)), false, nil
	}
	host, err := pl.resolve()
	if err != nil {
		return 0, 0, true, err
	}
	st, err := os.Stat(host)
	if err != nil {
		return 0, 0, true, err
	}
	return st.Mode(), st.Size(), true, nil
}
