package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// SubPathError is a volumeMount whose subPath could not be made ready. Its
// Error has the detail for logs; StatusMessage is the container's waiting
// message, which says no more than upstream kubelet's (the detail may name
// host paths).
type SubPathError struct {
	// Container and Mount name the container and its volumeMount.
	Container, Mount string
	// Create is true when the subPath did not exist and could not be
	// created, false when it existed and could not be pinned.
	Create bool
	// Err is the cause.
	Err error
}

// Error returns the message with its cause.
func (e *SubPathError) Error() string {
	if e.Create {
		return fmt.Sprintf("create subPath: %v", e.Err)
	}
	return fmt.Sprintf("prepare subPath: %v", e.Err)
}

// Unwrap returns the cause.
func (e *SubPathError) Unwrap() error { return e.Err }

// StatusMessage is upstream's message for the container's
// CreateContainerConfigError, e.g. `failed to prepare subPath for
// volumeMount "data" of container "app"`.
func (e *SubPathError) StatusMessage() string {
	if e.Create {
		return fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", e.Mount, e.Container)
	}
	return fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", e.Mount, e.Container)
}

// subPathsDirName is the directory of a pod's pinned subPaths, upstream's
// name for it.
const subPathsDirName = "volume-subpaths"

// PodSubPathsDir is <root>/pods/<uid>/volume-subpaths: the bind mount of
// the volumeMount at index i of container c on volume v is
// <PodSubPathsDir>/<v>/<c>/<i>, as upstream lays it out.
func PodSubPathsDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), subPathsDirName)
}

// subPath makes the subPath sub of the volume at volPath ready for the
// volumeMount at index of container c: resolved inside the volume,
// created as a directory if it does not exist (as upstream does, also in a
// read-only volume, with the volume root's mode), then pinned by a bind
// mount unless Options.UnpinnedSubPaths. It returns the host path to hand
// to the runtime.
func (m *Manager) subPath(pod *v1.Pod, c *v1.Container, index int, vm *v1.VolumeMount, volPath, sub string) (string, error) {
	fail := func(create bool, err error) error {
		m.log.Warn("subPath not prepared", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID,
			"container", c.Name, "volumeMount", vm.Name, "err", err)
		return &SubPathError{Container: c.Name, Mount: vm.Name, Create: create, Err: err}
	}
	// As upstream, whether the path exists is asked of the path as the
	// host sees it (symlinks followed): a missing one is created first,
	// and a failure there is a creation failure.
	_, statErr := os.Stat(filepath.Join(volPath, sub))
	create := errors.Is(statErr, fs.ErrNotExist)
	p, resolved, err := resolveSubPath(volPath, sub, create)
	if err != nil {
		return "", fail(create, err)
	}
	defer p.close()
	if m.opts.UnpinnedSubPaths {
		return resolved, nil
	}
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		// Container names come from pod data and name a directory.
		return "", fail(false, fmt.Errorf("%w: container name %q is not usable as a directory name", ErrInvalidVolume, c.Name))
	}
	target := filepath.Join(PodSubPathsDir(m.opts.RootDir, pod.UID), vm.Name, c.Name, strconv.Itoa(index))
	if err := m.pinSubPath(p, target); err != nil {
		return "", fail(false, err)
	}
	return target, nil
}

// pinSubPath bind-mounts the file p holds on target, through p's file
// descriptor, so that what the runtime mounts is what was checked,
// whatever a container does to the volume meanwhile. A target that already
// shows the same file (a restarted container) is kept; one that shows
// another (a configMap key since rewritten) is replaced.
func (m *Manager) pinSubPath(p *pinnedPath, target string) error {
	if !pinSupported {
		return fmt.Errorf("pin subPath: %w (set UnpinnedSubPaths)", ErrMountNotSupported)
	}
	// A target that shows the very file is its pin (the empty directory
	// or file of an unmounted target is another inode); asked first, so a
	// restart does not read the mount table.
	if p.sameAs(target) {
		return nil
	}
	mounted, err := m.opts.Mounter.IsMountPoint(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check mount point %s: %w", target, err)
	}
	if mounted {
		if err := m.opts.Mounter.Unmount(target); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if p.dir {
		err = os.Mkdir(target, 0o750)
	} else {
		// A file target takes a bind mount of any non-directory (file,
		// socket, device).
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create bind target: %w", err)
	}
	if err := m.opts.Mounter.Mount(p.source(), target, "", []string{"bind"}); err != nil {
		_ = os.Remove(target)
		return err
	}
	return nil
}

// cleanSubPaths unmounts and removes the pinned subPaths of one volume of
// a pod, before the volume itself is torn down: <subpaths>/<volume>/<c>/<i>
// for every container c and index i, then the directories left empty. It
// never removes anything recursively, so a bind mount that cannot be
// unmounted can never lead it into the volume's data; it returns the
// first such failure and leaves the rest for the next attempt.
func (m *Manager) cleanSubPaths(uid types.UID, volumeName string) error {
	base := PodSubPathsDir(m.opts.RootDir, uid)
	dir := filepath.Join(base, volumeName)
	containers, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range containers {
		cdir := filepath.Join(dir, c.Name())
		if !c.IsDir() {
			return fmt.Errorf("clean subPaths: %s is not a directory", cdir)
		}
		entries, err := os.ReadDir(cdir)
		if err != nil {
			return fmt.Errorf("clean subPaths: %w", err)
		}
		for _, e := range entries {
			target := filepath.Join(cdir, e.Name())
			mounted, err := m.opts.Mounter.IsMountPoint(target)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("clean subPaths: check mount point %s: %w", target, err)
			}
			if mounted {
				if err := m.opts.Mounter.Unmount(target); err != nil {
					return fmt.Errorf("clean subPaths: %w", err)
				}
			}
			err = os.Remove(target)
			if errors.Is(err, syscall.EBUSY) && !mounted {
				// Still a mount point, whatever the table said: unmount
				// it and try once more.
				if uerr := m.opts.Mounter.Unmount(target); uerr != nil {
					return fmt.Errorf("clean subPaths: %w", errors.Join(err, uerr))
				}
				err = os.Remove(target)
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("clean subPaths: %w", err)
			}
		}
		if err := os.Remove(cdir); err != nil {
			return fmt.Errorf("clean subPaths: %w", err)
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("clean subPaths: %w", err)
	}
	// The pod's subpaths directory goes with its last volume.
	if err := removeIfEmpty(base); err != nil {
		return fmt.Errorf("clean subPaths: %w", err)
	}
	return nil
}

// removeIfEmpty removes the directory dir unless it holds something; one
// that is not empty, or gone already (volumes are torn down in parallel,
// and another may have removed it), is no error. (rmdir of a non-empty
// directory is ENOTEMPTY, or EEXIST on some systems.)
func removeIfEmpty(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
