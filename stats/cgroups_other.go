//go:build !linux

package stats

// readPod: there are no cgroups but on Linux.
func (r *CgroupReader) readPod(string, string, PodUsage) *PodCgroupStats { return nil }
