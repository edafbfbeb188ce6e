// Package topologymanager is the kubelet's Topology Manager (upstream
// pkg/kubelet/cm/topologymanager): an admission handler that aligns the
// resources of a pod on the machine's NUMA nodes. Resource managers (the
// CPU manager, the memory manager, the device manager) plug in as
// HintProviders: for a container, or a whole pod, each says from which NUMA
// nodes it could allocate each resource (a Hint per possible affinity,
// marked preferred when the provider prefers it). The manager merges the
// hints by policy, refuses the pod when the policy requires an alignment
// that cannot be had, records the chosen affinity, and then has every
// provider Allocate, reading the affinity back through the Store.
//
// The decision is the pure function Merge; the Manager drives it over a
// pod's containers by scope:
//
//	tm, err := topologymanager.New(topologymanager.Options{
//	    Policy:    topologymanager.PolicySingleNumaNode, // topologyManagerPolicy
//	    Scope:     topologymanager.ScopeContainer,       // topologyManagerScope
//	    NUMANodes: []int{0, 1},
//	})
//	if err != nil { ... }
//	tm.AddHintProvider(cpuManager) // built with tm as its Store
//	chain := admission.Chain{..., tm}
//	if ok, reason, msg := chain.Admit(pod, admitted); !ok { ... }
//	...
//	tm.RemovePod(pod.UID) // when the pod is gone
//
// Policies: none (the default) merges nothing, records nothing and admits
// every pod, still calling Allocate; best-effort records the best affinity
// and admits every pod; restricted admits a pod only when the merged hint
// is preferred; single-numa-node merges only single-NUMA hints and admits
// only a preferred one. Scopes: container (the default) merges and
// allocates container by container, init containers first; pod merges the
// pod's hints once and gives every container that affinity. A refused pod
// gets upstream's reason and message: TopologyAffinityError, "Resources
// cannot be allocated with Topology locality"; an Allocate error, its
// AdmissionError type and message or UnexpectedAdmissionError (AdmitResult).
//
// Mask is a set of NUMA node IDs (a uint64, bit n for node n) and Hint a
// Mask with a preferred flag; an empty Mask means no NUMA preference.
// IterateMasks enumerates the candidate affinities a provider hints.
//
// Threading: Merge is pure. A Manager's Admit and AddHintProvider must not
// be called concurrently with each other (the kubelet admits one pod at a
// time); Affinity and RemovePod are safe for concurrent use, also from a
// provider's Allocate during Admit. Nothing here starts a goroutine or
// reads the clock.
//
// docs/topologymanager.md is the guide: the options, the KubeletConfiguration
// fields and flags, how a provider plugs in.
package topologymanager
