//go:build !linux

package volume

// noMounter fails every mount.
type noMounter struct{}

var _ Mounter = noMounter{}

func defaultMounter() Mounter { return noMounter{} }

// Mount fails with ErrMountNotSupported.
func (noMounter) Mount(source, target, fstype string, options []string) error {
	return ErrMountNotSupported
}

// Unmount fails with ErrMountNotSupported.
func (noMounter) Unmount(target string) error { return ErrMountNotSupported }

// IsMountPoint reports false: nothing can have been mounted.
func (noMounter) IsMountPoint(path string) (bool, error) { return false, nil }
