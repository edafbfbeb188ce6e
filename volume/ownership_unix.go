//go:build unix

package volume

import (
	"io/fs"
	"os"
	"syscall"
)

// rootMismatch says whether dir lacks the group or the bits fsGroup gives.
func rootMismatch(dir string, gid int64, mask fs.FileMode) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return true
	}
	want := mask | fs.ModeSetgid | execMask
	return info.Mode()&want != want
}
