// Package admission decides whether a pod may run on the node, as upstream
// kubelet's pod admit handlers do before a pod's first sync: a pod refused
// never runs, and its status says why (phase Failed, the handler's reason,
// the message "Pod was rejected: " and the handler's message).
//
// A Handler answers Admit(pod, otherPods) with ok, or a reason and a
// message; a Chain asks its handlers in order and returns the first
// refusal. HandlerFunc and PodHandlerFunc adapt functions (the eviction
// block's Manager.Admit is one). The agent's chain is upstream's: the
// pod's validity, eviction under node pressure, sysctls, the operating
// system, supplementalGroupsPolicy, the predicates, AppArmor, the node
// features the pod needs (NodeFeatures: a pod needing a feature the node
// does not declare in status.declaredFeatures is refused with
// PodFeatureUnsupported, "Pod requires node features that are not
// available: RestartAllContainersOnContainerExits").
//
// Predicates is upstream's predicate handler, against the Node a
// NodeGetter returns: the operating system (AdmitOS), then the checks the
// scheduler made (Failures), with upstream's reasons and messages:
//
//   - resources (Fit): the pod's effective requests (podspec.Requests: its
//     containers and sidecars, or its largest init container, or its
//     pod-level requests, plus overhead) beside the other pods' against the
//     node's allocatable; OutOfcpu, OutOfmemory, OutOfephemeral-storage,
//     OutOfpods, OutOf<resource> for hugepages and extended resources,
//     "Node didn't have enough resource: memory, requested: 2048, used: 0,
//     capacity: 1024";
//   - node affinity and nodeSelector (MatchesNodeAffinity): NodeAffinity,
//     "Predicate NodeAffinity failed: node(s) didn't match Pod's node
//     affinity/selector";
//   - node name: NodeName; host ports (HostPortsFree, protocol and host IP
//     aware): NodePorts;
//   - a NoExecute taint the pod does not tolerate (UntoleratedTaint; static
//     pods are exempt, and NoSchedule taints are the scheduler's):
//     TaintToleration.
//
// Three handlers check a pod's security settings against what the node can
// do, each with upstream's reason: Sysctls (NewSysctls with the node's
// allowed unsafe sysctls: SysctlForbidden), SupplementalGroupsPolicy (Strict
// only where the runtime reports it:
// SupplementalGroupsPolicyNotSupported) and AppArmor (a confined profile
// only on a host that enforces AppArmor, HostAppArmorEnabled; a Localhost
// profile must be named: AppArmor).
//
// A critical pod (podspec.IsCritical: static, mirror, or of system-critical
// priority) that lacks only resources preempts other pods instead, as
// upstream's: pods of a lower rank are stopped through a Preemptor, and
// when none free enough the pod is refused with UnexpectedAdmissionError.
//
//	pred, err := admission.NewPredicates(admission.PredicateOptions{Node: nodes})
//	if err != nil { ... }
//	chain := admission.Chain{admission.PodHandlerFunc(evictionManager.Admit), pred}
//	if ok, reason, msg := chain.Admit(pod, admittedPods); !ok { ... }
//
// Threading: everything here is a pure function of its arguments but for
// the NodeGetter and the Preemptor; Predicates is safe for concurrent use
// when they are. Upstream's kubelet admits one pod at a time, in the order
// of their creation, each against the pods admitted before it; so does
// the agent.
package admission
