package cgroups

import (
	"os"
	"path/filepath"
	"strings"
)

// MemorySwapAccounted reports whether the machine's cgroups account swap,
// as upstream's kuberuntime asks before it sets a container's swap limit:
// cgroup v1's memory.memsw.limit_in_bytes at the memory hierarchy's root,
// or, on v2, memory.swap.max in this process's own cgroup (the root has
// none). False where there are no cgroups.
func MemorySwapAccounted() bool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok {
				_, err := os.Stat(filepath.Join("/sys/fs/cgroup", rest, "memory.swap.max"))
				return err == nil
			}
		}
		return false
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}
