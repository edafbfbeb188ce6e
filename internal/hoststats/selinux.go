package hoststats

import (
	"bytes"
	"os"
	"strings"
)

// SELinuxEnabled reports whether the host runs SELinux: selinuxfs is
// mounted (procfs' mountinfo, under the procfs root proc, "/proc" when
// empty) and this process has a label other than the kernel's. Upstream
// kubelet asks the same before it has a container's termination-message
// file relabelled. Any file that cannot be read means no.
func SELinuxEnabled(proc string) bool {
	if proc == "" {
		proc = "/proc"
	}
	mountinfo, err := os.ReadFile(proc + "/self/mountinfo")
	if err != nil {
		return false
	}
	current, err := os.ReadFile(proc + "/self/attr/current")
	if err != nil {
		return false
	}
	return ParseSELinuxEnabled(mountinfo, current)
}

// ParseSELinuxEnabled is SELinuxEnabled's decision on the bytes of a
// mountinfo and of /proc/self/attr/current: a mount of type selinuxfs,
// and a label that is neither empty nor "kernel" (what the file says
// with SELinux built in but disabled).
func ParseSELinuxEnabled(mountinfo, current []byte) bool {
	label := strings.TrimRight(string(current), "\x00\n")
	if label == "" || label == "kernel" {
		return false
	}
	for line := range bytes.Lines(mountinfo) {
		fields := strings.Fields(string(line))
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				if fields[i+1] == "selinuxfs" {
					return true
				}
				break
			}
		}
	}
	return false
}
