package volume

import "golang.org/x/sys/unix"

// statfs asks statfs(2) about the filesystem holding path.
func statfs(path string) (statFS, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return statFS{}, err
	}
	return statFS{blocks: st.Blocks, bfree: st.Bfree, bavail: st.Bavail, files: st.Files, ffree: st.Ffree, bsize: uint64(st.Bsize)}, nil
}
