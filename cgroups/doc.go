// Package cgroups keeps upstream kubelet's cgroup hierarchy for pods
// (cgroupsPerQOS): every pod under one cgroup, kubepods, limited to the
// node's allocatable resources; Burstable pods under kubepods/burstable and
// BestEffort pods under kubepods/besteffort, Guaranteed pods directly under
// kubepods; and one cgroup per pod, pod<uid>, whose CPU shares (cpu.weight
// on cgroup v2), CFS quota and period, memory limit and optional pids limit
// are the pod's as upstream's ResourceConfigForPod computes them. The pod
// cgroup is the cgroup parent of the pod's sandbox, so the runtime puts the
// containers inside it.
//
// The pure parts: PodConfig (a pod's cgroup), NodeConfig (kubepods'),
// QOSConfigs (burstable's and besteffort's for the active pods),
// MilliCPUToShares, MilliCPUToQuota, SharesToWeight, and Name, which spells
// a cgroup for the cgroupfs driver (/kubepods/burstable/pod<uid>) and for
// the systemd driver
// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice).
//
// The Manager writes them with the cgroupfs driver, on cgroup v1 (each
// hierarchy under the root) or v2 (the unified hierarchy, controllers
// enabled down the tree), or with the systemd driver, as upstream's: each
// cgroup is a transient slice unit started over systemd's D-Bus API
// (Description, Wants= its parent slice, CPU, memory, IO and tasks
// accounting, no default dependencies), its limits set as unit properties
// (CPUShares or CPUWeight, CPUQuotaPerSecUSec and CPUQuotaPeriodUSec,
// MemoryLimit or MemoryMax, TasksMax) and then written to its files too;
// it is removed by stopping the unit. The D-Bus part is the small Systemd
// interface: SystemdConn (github.com/coreos/go-systemd) is the real one,
// DialSystemd connects it, and Start does when Options.Systemd is nil.
//
// A kubelet drives it as upstream's does:
//
//	m, _ := cgroups.New(cgroups.Options{StateDir: "/var/lib/kubelet/cgroups"}) // what it made
//	defer m.Close()
//	m.Start(ctx, cgroups.NodeConfig(allocatable)) // kubepods, burstable, besteffort
//	// syncing a pod, before its sandbox:
//	if !m.PodExists(pod) { m.UpdateQOS(activePods); m.EnsurePod(pod) }
//	parent, _ := m.CgroupParent(pod) // the sandbox's cgroup parent
//	// once its containers are gone (terminated):
//	n, _ := m.PodName(pod); m.Destroy(n)
//	// housekeeping: cgroups of pods that cannot be running
//	found, _ := m.Pods() // first, then the pods that may run
//	m.CleanupOrphans(found, possiblyRunning, volumesExist)
//
// A Manager removes only the pod cgroups it made: EnsurePod records each
// one it creates (in memory, and under Options.StateDir so that a
// restarted agent still owns them), and Destroy and CleanupOrphans leave
// any other pod cgroup alone (logged once, "not ours"), such as those of
// another agent on the same host under the same cgroup root. Agents that
// share a host should each have a CgroupRoot of their own: the kubepods
// and QoS cgroups under one root are sized by each agent for its own pods.
//
// Options.Root points the Manager at another cgroup mount, or at a plain
// directory tree standing for one: the tests run on such trees (v1 and
// v2) without root, against a fake Systemd, on the machine's cgroups with
// -tags root, and against a real systemd with -tags systemd
// (hack/systemd-test.sh). A pod's
// UID becomes a path component: one that is not letters, digits, "-" and
// "." is refused (ErrInvalidName), never joined into a path.
//
// The driver is the runtime's, as upstream's kubelet's since
// KubeletCgroupDriverFromCRI (GA in 1.34): with Options.Runtime set, the
// first Start asks it (the CRI RuntimeConfig; RuntimeDriver, three calls
// two seconds apart on Options.Clock) and uses its SYSTEMD or CGROUPFS;
// Options.Driver stays when the runtime does not implement the call
// (containerd 1.6). DriverFromRuntime is that decision as a pure function.
//
// Methods are safe for concurrent use. Nothing starts a goroutine but the
// D-Bus connection of the systemd driver, which Close ends.
package cgroups
