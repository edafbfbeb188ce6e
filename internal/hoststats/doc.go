// Package hoststats reads what a Linux node says about itself in procfs, the
// cgroup hierarchy and the filesystems: memory, CPU time, processes, network
// interfaces, pressure stall information (/proc/pressure and the cgroup v2
// *.pressure files), filesystem sizes and the disk usage of a directory. It is
// shared by the blocks that measure the node (eviction/stats for eviction
// signals, stats for the Summary API), so that each file is parsed in one
// place.
//
// The parsers (parse.go, and cgroup.go for what cAdvisor reads of a pod's
// or container's cgroup: CFS throttling, page cache, block I/O by device)
// are portable and pure: bytes in, numbers out. Host (host_linux.go,
// cgroup_linux.go) reads the files under a configurable procfs, cgroup and
// sysfs root, so tests point it at fixtures (testdata/cgroup: v1 and v2
// samples); Statfs, DiskUsage and the device
// helpers (fs_linux.go) use the system calls directly. Periodic
// (periodic.go) keeps one costly measurement per pod and renews it once per
// period with jitter, as upstream kubelet does for volume stats.
//
// Nothing here keeps state between calls except a Periodic value, which is
// safe for concurrent use.
package hoststats
