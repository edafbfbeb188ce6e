// Package stats builds the Summary API (k8s.io/kubelet/pkg/apis/stats/
// v1alpha1.Summary), what a kubelet serves at /stats/summary and what
// metrics-server, kubectl top and the HPA read, the way upstream kubelet's
// CRI stats provider does: the node from the machine (Host), the pods and
// their containers from the container runtime's CRI stats (Runtime), their
// logs and volumes from the node's directories.
//
//	p, err := stats.New(stats.Options{NodeName: "node-1", Runtime: client})
//	...
//	s, err := p.Summary(ctx, false) // the full summary
//	s, err = p.Summary(ctx, true)   // ?only_cpu_and_memory=true
//
// Provider.Summary has the method set of server.StatsProvider, so a
// *Provider is what the kubelet API serves.
//
// # What is measured
//
// Node: its name; StartTime, when the machine booted; CPU and Memory of the
// root cgroup (cumulative CPU time and the rate computed from it, usage,
// working set, RSS, page faults, and available = MemTotal - working set);
// Network, the host's interfaces but loopback, veth pairs and other
// engines' bridges, eth0 as the default one; Fs, the filesystem of the
// kubelet's root directory; Runtime.ImageFs, the runtime's first image
// filesystem (its usage from ImageFsInfo, its size from statfs when this
// process sees its mountpoint), and Runtime.ContainerFs, the same, or the
// runtime's first container filesystem when ImageFsInfo puts it at another
// mountpoint (KubeletSeparateDiskGC: the writable layers apart from the
// images, as CRI-O's split disk); Rlimit, the task limit
// and count; SystemContainers "kubelet", "misc", "pods" and "runtime" for
// the cgroups Options names (CPU and memory, and a start time); pressure
// stall information (KubeletPSI) of the node's CPU, memory and I/O
// (/proc/pressure) and of each system container's (its cgroup v2
// cpu.pressure, memory.pressure, io.pressure), left out where the host
// has none.
//
// Pods: one per ready sandbox, PodRef from the sandbox's metadata,
// StartTime its creation; from ListPodSandboxStats its CPU, memory,
// network, process count, and the pressure stall information of its CPU,
// memory and I/O when the runtime gives it; each running container with
// CPU, memory, swap, their pressure and its I/O pressure likewise, Rootfs
// (its writable layer, on
// the filesystem named by the runtime) and Logs (the files of its log
// directory); VolumeStats of its emptyDir, configMap, downwardAPI,
// gitRepo, secret and projected volumes (walked when the pod is first seen,
// then once per VolumeStatsPeriod plus jitter, as upstream's
// --volume-stats-agg-period), followed, with an Options.Volumes (a
// VolumeMeasurer: *volume.Manager), by those its volume plugins measure
// at the same times: persistent volumes (local ones by statfs of their
// mount, CSI ones by their driver's NodeGetVolumeStats) named after the
// pod's volume with the claim's PVCRef, and inline CSI volumes;
// EphemeralStorage, the sum of its containers'
// writable layers and logs, its ephemeral volumes (an emptyDir on the node
// filesystem, configMap, downwardAPI, gitRepo), its pod-level logs and its
// etc-hosts file. When the runtime cannot list sandbox stats (it answers
// Unimplemented, or fails), pods are measured from ListContainerStats as
// upstream's fallback does: their CPU and memory are their containers'
// sums and they have no network or process figures. A runtime that answers
// Unimplemented to ListContainerStats and ImageFsInfo as well gets a summary
// of the node alone, with no pods and no runtime filesystem.
//
// A CPU rate the runtime or the host leaves out (usage_nano_cores) is
// computed from two cumulative samples at least CPUSamplePeriod apart,
// per container, pod, system container and the node; the samples of
// containers and pods that are gone are forgotten at the next Summary.
//
// The CPU-and-memory summary measures only the node's and system
// containers' CPU and memory and the pods' and containers' CPU and memory
// (with their PSI, and no I/O), with no filesystem walk and no ImageFsInfo: what metrics-server asks for
// every 15 seconds stays cheap.
//
// # Usage, for per-container metrics
//
// Provider.Usage is what upstream kubelet's /metrics/cadvisor reports
// about workloads, taken from the CRI as PodAndContainerStatsFromCRI does:
// each ready sandbox's own CPU, memory, network, process count and I/O
// pressure from ListPodSandboxStats, and each running container's CPU,
// memory, swap, I/O pressure and writable layer, with its ID, name, image
// and creation time. Figures are the runtime's, unconverted: what it left
// out is nil, no rate is computed, nothing is summed, nothing is walked.
// When the runtime cannot list sandbox stats, the containers come from
// ListContainerStats and the pods have no figures of their own.
// examples/prometheus turns it into cAdvisor's series.
//
// CgroupReader adds, for the pods of a Usage, what cAdvisor reads of their
// cgroups and the CRI stats do not give: each pod cgroup's (named by a
// PodCgroupLister: cgroups.Manager) and its containers' (ContainerCgroup
// finds them among its children by ID) CFS throttling, page cache and
// block I/O by device, and the packets and drops of the pod's network
// namespace, read through a process of the pod. It never fails: what
// cannot be read is left out.
//
// # Hosts
//
// LinuxHost (Linux only, the default Host there) reads procfs and the
// cgroup hierarchy (v1 or v2) and uses statfs(2); statstest.Host is a
// scripted node for tests and for nodes that run no real workload.
//
// # Threading
//
// Summary is safe for concurrent use. A Provider keeps, between calls, the
// last CPU sample of each measured object and the last volume walk (and
// VolumeMeasurer answer) of each pod; nothing else. The VolumeMeasurer is
// called from Summary's goroutine, with its context.
package stats
