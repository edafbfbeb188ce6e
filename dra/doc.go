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
// gRPC connection to the plugin's endpoint (a unix socket, dialed by
// Options.Dialer), speaks v1 when the plugin offers it, else v1beta1, and
// opens the plugin's health stream (see Device health); DeRegisterPlugin
// ends the stream and closes the connection.
//
// # ResourceSlices
//
// A driver publishes its devices on the API server as ResourceSlices of
// the node; the node deletes them when the driver is gone, so that no pod
// is scheduled onto devices nobody serves, as upstream's kubelet does
// (Options.Slices, a ResourceSlices: examples/apiserver's deletes them
// with the field selectors spec.nodeName and spec.driver). The Registry
// follows each plugin's gRPC connection (a stats handler on it: the
// connection's begin and end; at its end it asks gRPC to connect again).
// A driver is usable while one of its plugins is connected. Whenever a
// plugin registers (not connected yet), connects, disconnects or
// deregisters, a driver that is not usable gets a wipe of its
// ResourceSlices scheduled Options.WipingDelay later (DefaultWipingDelay,
// upstream's 30 seconds, on Options.Clock), unless one is pending already,
// whose time stands; a driver usable again cancels its pending wipe. So a
// plugin whose service stops, that deregisters, or that registers but
// never answers has its driver's slices deleted after the delay, unless
// a plugin of the driver is back in time (a restart, a rolling update).
// Registry.WipeAll deletes every slice of the node: the agent runs it
// once in the background as it starts, as upstream's kubelet does, since
// no driver has registered yet and one may never come back. A deletion
// that fails is tried again with upstream's back-off (1 second doubling,
// plus up to 20%, capped at 5 minutes; as upstream's, the cap ends the
// tries: 9 in all, then "Failed to delete ResourceSlices, giving up" is
// logged); NotFound counts as done, Unauthorized (credentials not ready
// yet) is retried quietly. A wipe that has started runs to its end even
// if the driver is back meanwhile, as upstream's. Registry.Close cancels
// the pending wipes and those under way; a node that stops deletes
// nothing. The decisions are pure: the schedule of the retries and what a
// change means for a driver's wipe.
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
// # Device health
//
// For as long as a plugin is registered, a goroutine of the Registry keeps
// its health stream open (NodeWatchResources of the v1alpha1
// DRAResourceHealth service, upstream 1.36's; opened again
// HealthRetryPeriod, 5 seconds, after it ends or fails, so a plugin that
// does not serve it fails every 5 seconds, as upstream's). Each report is
// merged into the node's Health (Health.Merge: every reported device as
// of its receipt, on the Options.Clock; a device left out whose report no
// longer holds becomes Unknown) and written to
// Options.StateDir/dra_health_state (HealthFile, upstream's JSON, read at
// first use; one that cannot be read is logged and ignored, as
// upstream's). When a device's health, message or timeout changed, the
// pods whose prepared claims hold it are due (TakeHealthChanges: the
// caller syncs them, as upstream's kubelet does on its DRA manager's
// updates). When the stream ends the driver's devices are forgotten.
//
// Manager.UpdateAllocatedResourcesStatus then fills each container
// status's allocatedResourcesStatus (upstream's ResourceHealthStatus and,
// for the message, ResourceHealthStatusMessage, both beta and on since
// 1.36): for each item of the container's resources.claims whose claim
// was prepared, an entry "claim:<pod claim>" ("claim:<pod
// claim>/<request>" for a request) with each of the claim's devices (of
// the request, a subrequest counting as its request) by its first CDI ID,
// else "<driver>/<pool>/<device>", and its health: the last report while
// it holds (the plugin's timeout, else DefaultHealthTimeout, 30 seconds),
// else Unknown; a message when the plugin gave one. As upstream's, a
// report that times out shows Unknown at the pod's next sync, with no
// sync of its own. The decisions are pure: Health.Merge, Health.At and
// the status's filling, table-tested.
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
// # Metrics
//
// Options.Metrics (nil: none) is told how long each PrepareResources and
// UnprepareResources took, with its error, and each unary call to a
// plugin (a unary interceptor on the plugin's connection) with its driver,
// full gRPC method and status code, on Options.Clock: upstream's
// dra_operations_duration_seconds and
// dra_grpc_operations_duration_seconds. Manager.ClaimsInUse counts the
// prepared claims by driver and all of them under AnyDriver ("<any>",
// always there), for upstream's dra_resource_claims_in_use, which is read
// at scrape time. The agent passes its agent.DRAMetrics; examples/prometheus
// serves the three series.
//
// # Differences from upstream
//
// Which of two unregistered drivers of a claim is named, and the order of
// the calls and CDI devices, follow the claims' and allocation's order
// (upstream's follow maps). A CDI ID comes once per container. The claims
// of a pod to unprepare are the recorded ones only (upstream also derives
// them from the pod when none is recorded, which unprepares nothing more).
// The entries of allocatedResourcesStatus keep their order, new ones last,
// and drivers come by name (upstream's orders are a map's). Health is
// spoken in v1alpha1 only, as upstream 1.36 (1.37 adds v1 with a fallback
// to v1alpha1). A wipe of ResourceSlices that has failed its ninth try
// gives up at once with a log (upstream waits another 256 seconds first,
// silently); the node it is for is the ResourceSlices' own (upstream reads
// its Node first, retrying while it is not found).
//
// A Manager's methods are safe for concurrent use. It starts no goroutine
// but its Registry's, one per registered plugin for its health stream and
// one per pending wipe of a driver's ResourceSlices, which Registry.Close
// ends; the agent closes it when it stops.
// Options.Dialer connects to the plugins: a test inside a testing/synctest
// bubble gives one whose connections live in the bubble (dratest's
// in-memory plugins), since a goroutine reading a socket is never durably
// blocked and the bubble would never settle.
// Claims is a one-method interface with a ClaimsFunc adapter; an API
// server's client (examples/apiserver) or a map serves it. So is
// ResourceSlices, with ResourceSlicesFunc. Package dratest
// has a fake DRA kubelet plugin.
package dra
