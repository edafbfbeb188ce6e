// Package cpumanager is the kubelet's CPU manager: which CPUs each
// container may run on.
//
// Under the policy "none" (upstream's default) it decides nothing: every
// container runs on every CPU. Under "static", the containers of
// Guaranteed pods that request a whole number of CPUs get that many CPUs
// exclusively (GuaranteedCPUs); every other container runs on the shared
// pool, the CPUs nobody holds, which always keeps the reserved CPUs
// (reservedSystemCPUs, or ceil(kubeReserved + systemReserved cpu) CPUs
// picked by Take). CPUs are picked as upstream packs them (Take): whole
// sockets, whole NUMA nodes, whole cores, then single CPUs, each from the
// fullest socket, so that large free units stay whole; with a topology
// manager, from its chosen NUMA nodes first (Options.Affinity,
// TakeAligned). A regular init container's CPUs are reused by the pod's
// app containers; a sidecar keeps its own.
//
// Driving it, as the agent does:
//
//   - Admit (an admission.Handler) or, under a topology manager, Allocate
//     for each container: the exclusive CPUs are chosen before the pod is
//     admitted; failures refuse the pod with upstream's reasons
//     (SMTAlignmentError under full-pcpus-only, UnexpectedAdmissionError
//     with "not enough cpus available to satisfy request").
//   - ContainerCPUs when a container's CRI config is built (cpuset_cpus),
//     with ContainerHasExclusiveCPUs and PodHasExclusiveCPUs lifting the
//     CFS quota (DisableCPUQuotaWithExclusiveCPUs).
//   - Reconcile every cpuManagerReconcilePeriod: it releases the CPUs of
//     pods no longer active and returns the cpusets to write with
//     UpdateContainerResources; Failed makes the next pass retry one.
//   - RemovePod when a pod ends, for a prompt release.
//
// The state survives restarts in Options.StateDir/cpu_manager_state, written
// at its first change (upstream's file name and fields, our own checksum;
// StateDir is made if missing): a checkpoint of
// another policy, or whose CPUs do not add up to the machine's, makes New
// fail, as upstream refuses to start; the operator drains the node and
// removes the file. CPUs and AllocatableCPUs answer the pod-resources API.
//
// The machine comes from Discover (sysfs) or, in tests, NewTopology and
// FromCPUs. A Manager is safe for concurrent use and starts no goroutine.
package cpumanager
