// Package memorymanager is the kubelet's Memory Manager (upstream
// pkg/kubelet/cm/memorymanager): from which NUMA nodes each container
// takes its memory and huge pages.
//
// Under the policy "None" (upstream's default) it decides nothing: every
// container uses every node's memory. Under "Static", each container of a
// Guaranteed pod gets its memory and hugepages-<size> requests as Blocks
// pinned to a set of NUMA nodes, and the manager keeps, per node and
// resource, upstream's account (MemoryTable: TotalMemSize, SystemReserved,
// Allocatable, Reserved, Free). The nodes are the topology manager's
// affinity (Options.Affinity) when it recorded one, else the narrowest
// preferred set of nodes that fits, widened when the affinity is too small
// for the request. A node serves either single-NUMA allocations or the one
// group of nodes it was first used with, never both (NUMANodeState.Cells).
// The memory of a regular init container is reused by the pod's later
// containers on the same nodes; a sidecar keeps its own.
//
// The reserved memory (reservedMemory, --reserved-memory) is checked by
// New as upstream checks it at start: it must name existing NUMA nodes,
// reserve some memory, and add up, for memory and each huge page size, to
// kubeReserved + systemReserved (+ the hard eviction threshold of
// memory.available, for memory).
//
// Driving it, as the agent does:
//
//   - Register the Manager with a topologymanager.Manager (AddHintProvider;
//     build it with that manager as Options.Affinity): ContainerHints and
//     PodHints feed the merge, Allocate pins the memory, and an Allocate
//     error refuses the pod through topologymanager.AdmitResult
//     (UnexpectedAdmissionError, "Allocate failed due to [memorymanager]
//     ..., which is unexpected"). Without a topology manager, Admit (an
//     admission.Handler) allocates every container, init containers first.
//   - ContainerMemoryNodes when a container's CRI config is built
//     (cpuset_mems).
//   - AddContainer when a container starts: the pod's finished regular init
//     containers give their memory back.
//   - RemovePod when a pod ends, and RemoveStaleState with the active pods
//     at housekeeping (upstream's removal of stale state).
//   - Memory and AllocatableMemory answer the pod-resources API.
//
// The state survives restarts in Options.StateDir/memory_manager_state
// (upstream's file name and fields, our own checksum): a checkpoint of
// another policy, or whose machine state does not match the machine, the
// reservations and the assignments replayed, makes New fail with
// upstream's message, as upstream refuses to start; the operator drains
// the node and removes the file.
//
// The machine comes from Discover (sysfs) or, in tests, FakeMachine and
// NewMachine. A Manager is safe for concurrent use; it starts no goroutine
// and reads no clock. docs/memorymanager.md is the guide.
package memorymanager
