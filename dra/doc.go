// Package dra is the node side of Dynamic Resource Allocation (upstream's
// DRA manager, GA and locked on since 1.35): before a pod's sandbox is
// created, the devices its resource claims were allocated are prepared by
// the DRA drivers that serve them; its containers get their CDI devices;
// once the pod has stopped, the drivers unprepare them.
//
// A pod asks for devices with spec.resourceClaims, each naming a
// ResourceClaim (resourceClaimName) or a template from which the
// resourceclaim controller made one (resourceClaimTemplateName, the made
// claim's name in status.resourceClaimStatuses), and, for an extended
// resource served by DRA, the claim the scheduler made
// (status.extendedResourceClaimStatus). The scheduler allocates each claim
// (status.allocation: devices, each of a driver) and reserves it for the
// pod (status.reservedFor).
//
// # Drivers
//
// A DRA driver's kubelet plugin announces itself through the plugin
// registration directory (package pluginmanager, plugin type DRAPlugin)
// under its driver's name, with the gRPC services of the DRA kubelet
// plugin API it serves as its supported versions ("v1.DRAPlugin",
// "v1beta1.DRAPlugin": Services). Manager.Registry is the Handler to give
// pluginmanager for that type: ValidatePlugin refuses a plugin that lists
// none of the Services, with upstream's messages; RegisterPlugin makes a
// gRPC connection to the plugin's endpoint (a unix socket) and speaks v1
// when the plugin offers it, else v1beta1; DeRegisterPlugin closes it.
// Upstream also deletes a driver's ResourceSlices when none of its plugins
// is back 30 seconds after the last went: that is the API server's side,
// left to the caller.
//
// # Prepare
//
// Manager.PrepareResources does upstream's checks of each claim, in
// upstream's order and words, and fails on the first that does not hold:
//
//   - a template's claim must have been made: `pod "ns/name": ResourceClaim
//     not created yet` (ErrClaimNotCreated); a template whose status names
//     no claim needs none;
//   - the claim is read from the API server (Options.Claims): "fetch
//     ResourceClaim NAME: ..." with the server's error;
//   - a claim made from a template must be owned by the pod;
//   - the claim must be reserved for the pod: "pod NAME (UID) is not
//     allowed to use ResourceClaim NAME (UID)";
//   - the claim must be allocated: "ResourceClaim NAME: not allocated";
//   - the driver of each allocated device must be registered:
//     "DRA driver NAME is not registered" (ErrDriverNotRegistered).
//
// Nothing is recorded until every check holds. Then each claim is recorded
// as used by the pod, and the claims not yet prepared are prepared: one
// NodePrepareResources call per driver with the pod's claims of that
// driver (namespace, UID, name), bounded by Options.CallTimeout (45s,
// upstream's). A call's failure is "NodePrepareResources: ...", a claim's
// "NodePrepareResources failed for ResourceClaim NAME: ...", a claim left
// out "NodePrepareResources skipped N ResourceClaims". A claim already
// prepared, for an earlier sandbox of the pod or for another pod, is not
// prepared again. Every error is wrapped in "prepare dynamic resources: ";
// cri/podsync then holds the pod with upstream's
// FailedPrepareDynamicResources event, in ContainerCreating, and the next
// sync tries again. A pod without claims, or whose claims allocate no
// device, needs nothing.
//
// # Containers
//
// Manager.CDIDevices gives a container the CDI device IDs the drivers
// returned for the claims it uses (resources.claims: the whole claim or
// one request; with DRAExtendedResource, the requests of the scheduler's
// claim mapped to its extended resource requests), as upstream's
// GetResources; cri/podsync/containerconfig puts them into the container's
// CRI config (CDIDevices, Options.ClaimDevices). Upstream passes no CDI
// annotations since 1.31, nor does this.
//
// # Unprepare
//
// Manager.UnprepareResources, called when the pod's containers have
// stopped and before its final status (the agent's SyncTerminatingPod),
// forgets the pod in each claim it used; a claim no other pod uses is
// unprepared (NodeUnprepareResources, one call per driver, upstream's
// messages) and then dropped. A failure leaves the claim recorded for the
// retry; a driver whose plugin is gone is such a failure, as upstream's.
// Manager.UnprepareInactive does the same for every recorded pod that is
// no longer active (upstream's reconcile loop; the agent's housekeeping).
//
// # Checkpoint
//
// The recorded claims (their pods and each driver's devices with their CDI
// IDs) are written to Options.StateDir/dra_manager_state (CheckpointFile)
// whenever they change, as upstream's checkpoint: {"Data": JSON of kind
// DRACheckpoint, version checkpoint.dra.kubelet.k8s.io/v1, "Checksum":
// CRC32 of Data}, written to a temporary file renamed over it, mode 0600.
// It is read at the Manager's first use: a restarted node gives running
// containers their CDI devices and unprepares the claims when their pods
// go. As upstream's, a claim read from the checkpoint counts as not yet
// prepared: a new sandbox that needs it prepares it again (the driver's
// call is idempotent) and takes the driver's new answer. A checkpoint that
// cannot be read fails every call that needs the claims (upstream's
// kubelet does not start).
//
// # Differences from upstream
//
// Which of two unregistered drivers of a claim is named, and the order of
// the calls and CDI devices, follow the claims' and allocation's order
// (upstream's follow maps). A CDI ID comes once per container. The claims
// of a pod to unprepare are the recorded ones only (upstream also derives
// them from the pod when none is recorded, which unprepares nothing more).
// Device health (ResourceHealthStatus, ResourceHealthStatusMessage) is
// not reported yet.
//
// A Manager starts no goroutine; its methods are safe for concurrent use.
// Claims is a one-method interface with a ClaimsFunc adapter; an API
// server's client (examples/apiserver) or a map serves it. Package dratest
// has a fake DRA kubelet plugin.
package dra
