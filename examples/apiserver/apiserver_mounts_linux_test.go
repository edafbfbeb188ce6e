//go:build apiserver && linux

package apiserver_test

import (
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// unmountUnder unmounts what the agent left mounted under root (the tmpfs
// of secret and projected volumes, as root), deepest first, so that the
// test's temporary directory can be removed.
func unmountUnder(t *testing.T, root string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
			points = append(points, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		if err := syscall.Unmount(p, 0); err != nil {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", p, err)
			}
		}
	}
}
