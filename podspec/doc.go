// Package podspec is the pod vocabulary every block of a node shares: the
// questions a kubelet asks of a v1.Pod's spec and metadata, answered once,
// as upstream answers them. It imports only k8s.io/api and apimachinery, so
// any block (and any user of one block) can ask "what QoS class is this
// pod?" without importing the block that generates statuses.
//
//   - Quality of service: QOSClass, ComputeQOSClass.
//   - Effective resources: Requests (what admission fits against the node's
//     allocatable), EffectiveResources with ContainerRequests or
//     ContainerLimits (what cgroups and eviction sum), IsPodLevelResource;
//     huge pages: HugePageSize (of a hugepages-<size> name) and
//     HugePageUnitSize (its "2MB" spelling in the CRI and cgroups).
//   - Critical pods: IsCritical and SystemCriticalPriority (never evicted,
//     preempt at admission, stopped last at shutdown).
//   - Containers: IsSidecar (a restartable init container) and
//     RestartsOnResize (a container's resizePolicy).
//   - Restarts (container restart rules): RestartsAfterExit (the exit code
//     against the container's rules, its own policy, then the pod's),
//     RestartsAfterKill (after a failed probe), MayRestart, and the
//     rule that restarts the whole pod in place: RestartsAllContainers,
//     AllContainersCouldRestart.
//   - Where a pod came from: IsStatic, IsMirror, FullName and the config
//     annotations (ConfigSourceAnnotation, ConfigMirrorAnnotation,
//     ConfigHashAnnotation, ConfigSeenAnnotation).
//   - Security: AppArmorProfile (field, deprecated annotation, pod) and
//     NormalizeSysctlName.
//   - Node features: the names a node declares in status.declaredFeatures
//     (NodeFeature*, upstream's nodedeclaredfeatures) and those a pod needs
//     of its node (RequiredNodeFeatures).
//
// Every function is pure, reads its pod and never modifies it, and is safe
// for concurrent use.
package podspec
