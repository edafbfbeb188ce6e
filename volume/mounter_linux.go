package volume

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sysMounter mounts with mount(2).
type sysMounter struct{}

var (
	_ Mounter        = sysMounter{}
	_ SELinuxSupport = sysMounter{}
)

func defaultMounter() Mounter { return sysMounter{} }

// Mount calls mount(2) with nodev,nosuid for tmpfs, and MS_BIND (not
// recursive, as upstream's "-o bind") for fstype "" with the option
// "bind"; with the options "bind" and "ro" the bind mount is then
// remounted read-only, as upstream's mounter does.
func (sysMounter) Mount(source, target, fstype string, options []string) error {
	var flags uintptr
	data := strings.Join(options, ",")
	readOnlyBind := false
	switch {
	case fstype == "tmpfs":
		flags = syscall.MS_NODEV | syscall.MS_NOSUID
	case fstype == "" && len(options) == 1 && options[0] == "bind":
		flags, data = syscall.MS_BIND, ""
	case fstype == "" && len(options) == 2 && options[0] == "bind" && options[1] == "ro":
		flags, data, readOnlyBind = syscall.MS_BIND, "", true
	}
	if err := syscall.Mount(source, target, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s (%s): %w", fstype, target, strings.Join(options, ","), err)
	}
	if readOnlyBind {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	return nil
}

// Unmount calls umount(2).
func (sysMounter) Unmount(target string) error {
	if err := syscall.Unmount(target, 0); err != nil {
		return fmt.Errorf("unmount %s: %w", target, err)
	}
	return nil
}

// IsMountPoint looks for path in /proc/self/mountinfo (after resolving
// symlinks), which also finds bind mounts on the same device.
func (sysMounter) IsMountPoint(path string) (bool, error) {
	p, table, err := mountTable(path)
	if err != nil {
		return false, err
	}
	for line := range bytes.Lines(table) {
		fields := strings.Fields(string(line))
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == p {
			return true, nil
		}
	}
	return false, nil
}

// SupportsSELinux reports whether the mount that holds path (after
// resolving symlinks) has "seclabel" among its superblock options in
// /proc/self/mountinfo.
func (sysMounter) SupportsSELinux(path string) (bool, error) {
	p, table, err := mountTable(path)
	if err != nil {
		return false, err
	}
	return seclabeled(table, p), nil
}

// mountTable resolves path's symlinks and reads this process's mount
// table, /proc/self/mountinfo.
func mountTable(path string) (string, []byte, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	table, err := readConsistently("/proc/self/mountinfo", os.ReadFile)
	return p, table, err
}

// seclabeled finds the mount of table (a mountinfo) whose mount point is
// the longest one holding path, the last such line winning as the last
// mount on a point hides those below it, and reports whether its
// superblock options (after the " - fstype source" separator) include
// "seclabel".
func seclabeled(table []byte, path string) bool {
	best, labeled := -1, false
	for line := range bytes.Lines(table) {
		fields := strings.Fields(string(line))
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountinfo(fields[4])
		if !within(point, path) || len(point) < best {
			continue
		}
		best, labeled = len(point), false
		for i, f := range fields {
			if f == "-" && i+3 < len(fields) {
				for _, o := range strings.Split(fields[i+3], ",") {
					labeled = labeled || o == "seclabel"
				}
				break
			}
		}
	}
	return labeled
}

// mountTableReads bounds readConsistently.
const mountTableReads = 10

// readConsistently reads a /proc mount table until two reads in a row
// agree. The kernel hands such a table out a page per read(2) and does
// not hold the mount lock between them, so a read that races a mount or
// unmount elsewhere (another volume's teardown, a container starting) can
// skip lines that were there all along; a subPath pin then looks
// unmounted, and its removal fails with EBUSY.
func readConsistently(path string, read func(string) ([]byte, error)) ([]byte, error) {
	prev, err := read(path)
	if err != nil {
		return nil, err
	}
	for range mountTableReads - 1 {
		cur, err := read(path)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	return nil, fmt.Errorf("%s changed on each of %d reads", path, mountTableReads)
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
