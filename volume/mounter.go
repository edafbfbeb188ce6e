package volume

import "errors"

// ErrMountNotSupported is returned by the default Mounter where mounting is
// not implemented (outside Linux).
var ErrMountNotSupported = errors.New("mounting is not supported on this platform")

// Mounter mounts and unmounts filesystems: tmpfs for emptyDir medium
// Memory, secret and projected volumes, and the bind mounts that pin
// subPaths. The default on Linux uses mount(2), which needs CAP_SYS_ADMIN;
// volumetest.Mounter is a fake that records calls.
type Mounter interface {
	// Mount mounts source of type fstype on target with options
	// ("size=67108864", ...). With fstype "" and the option "bind" it
	// bind-mounts source (a path, possibly /proc/<pid>/fd/<n>) on target.
	Mount(source, target, fstype string, options []string) error
	// Unmount unmounts target.
	Unmount(target string) error
	// IsMountPoint reports whether something is mounted on path.
	IsMountPoint(path string) (bool, error)
}

// SELinuxSupport is an optional capability of a Mounter: whether the
// filesystem that holds path carries SELinux labels (it is mounted with
// the "seclabel" option), which upstream asks of a CSI volume before it
// lets the runtime relabel it. The default Mounter on Linux has it; with
// a Mounter without it, CSI volumes are not relabelled.
type SELinuxSupport interface {
	SupportsSELinux(path string) (bool, error)
}
