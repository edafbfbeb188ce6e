//go:build unix

package localstate

import "syscall"

// oNoFollow makes an open fail (ELOOP) when the path's last element is a
// symbolic link.
const oNoFollow = syscall.O_NOFOLLOW
