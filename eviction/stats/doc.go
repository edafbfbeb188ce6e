// Package stats is what the eviction manager observes: a small summary of
// node and pod resource usage, the Provider interface that produces it, and
// Linux, a Provider that reads it from the machine and the container runtime.
//
// # The summary
//
// Summary holds only the fields eviction signals and pod ranking need (it is
// a small subset of the kubelet's stats/v1alpha1 Summary API, with the same
// meanings):
//
//   - Node.Memory: available and working-set bytes of the whole node
//     (memory.available = AvailableBytes, capacity = Available + WorkingSet).
//   - Node.AllocatableMemory: the same for the cgroup that holds every pod
//     (allocatableMemory.available); nil when not measured.
//   - Node.Fs and Node.ImageFs: bytes and inodes of the node filesystem (the
//     one holding the kubelet's root directory) and of the runtime's image
//     filesystem; DedicatedImageFs says whether they are different devices.
//   - Node.ContainerFs: the runtime's container filesystem (the writable
//     layers), when the runtime reports it at another mountpoint than its
//     image filesystem (SplitContainerFs, upstream's KubeletSeparateDiskGC);
//     nil means it is the image filesystem.
//   - Node.Rlimit: the PID limit and the number of processes
//     (pid.available = MaxPID - NumOfRunningProcesses).
//   - Pods: per pod, its memory working set and process count, per container
//     its memory, writable layer (Rootfs) and log usage, and the usage of its
//     local volumes (emptyDir).
//
// A nil pointer means "not measured"; the signals and rankings that need it
// skip it, as upstream does.
//
// # Providers
//
// Linux (linux.go, Linux only) reads node memory from /proc/meminfo and the
// root memory cgroup (v1: memory.usage_in_bytes and total_inactive_file of
// memory.stat; v2: memory.current when the root has it, else /proc/meminfo's
// MemTotal-MemFree, minus inactive_file), filesystems with statfs(2), PIDs
// from /proc/sys/kernel/pid_max and /proc/loadavg, and pod and container
// usage from the CRI (ListPodSandboxStats, ListContainerStats, ImageFsInfo)
// plus the pod's log directory and emptyDir volumes, measured by walking
// them: the logs at every Get, a pod's emptyDirs when it is first seen and
// then once per VolumeStatsPeriod (1m plus up to 1m of jitter, upstream's
// --volume-stats-agg-period). When the runtime cannot list its sandboxes'
// stats (containerd fails the whole list when one sandbox has no metrics),
// pods are measured from their containers and Summary.Incomplete says so.
// A runtime that answers Unimplemented to ListContainerStats has no pod
// measured (Incomplete says so), and to ImageFsInfo its images on nodefs.
// A fake provider for tests is evictiontest.Stats.
//
// # Threading
//
// Linux.Get is safe for concurrent use; the only state it keeps between
// calls is the last walk of each pod's emptyDir volumes, dropped when the
// pod is gone.
package stats
