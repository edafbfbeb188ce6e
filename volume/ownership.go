package volume

import (
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// Permission bits a volume's fsGroup gets, as upstream's.
const (
	rwMask   fs.FileMode = 0o660 // group read-write, on a writable volume
	roMask   fs.FileMode = 0o440 // group read, on a read-only one
	execMask fs.FileMode = 0o110 // directories: searchable
)

// podFSGroup returns the pod's fsGroup and its change policy; nil when
// the pod sets none.
func podFSGroup(pod *v1.Pod) (*int64, v1.PodFSGroupChangePolicy) {
	if pod == nil || pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.FSGroup == nil {
		return nil, ""
	}
	policy := v1.FSGroupChangeAlways
	if p := pod.Spec.SecurityContext.FSGroupChangePolicy; p != nil {
		policy = *p
	}
	return pod.Spec.SecurityContext.FSGroup, policy
}

// setOwnership gives everything under dir (dir included) to the group
// fsGroup, as upstream's SetVolumeOwnership: group read (and write, unless
// readOnly) added to every file and directory, directories searchable and
// setgid so that new files inherit the group. Symlinks are re-grouped but
// not chmodded (that would change their target). With the OnRootMismatch
// policy nothing is done when dir already has the group and the bits.
func setOwnership(dir string, fsGroup *int64, policy v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if policy == v1.FSGroupChangeOnRootMismatch && !rootMismatch(dir, *fsGroup, mask) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return setFileOwnership(path, info, *fsGroup, mask)
	})
}

func setFileOwnership(path string, info fs.FileInfo, gid int64, mask fs.FileMode) error {
	if err := os.Lchown(path, -1, int(gid)); err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	if info.IsDir() {
		mask |= fs.ModeSetgid | execMask
	}
	mode := info.Mode() | mask
	if mode == info.Mode() {
		return nil
	}
	return os.Chmod(path, mode&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky))
}
