// Package dra is the node side of Dynamic Resource Allocation (upstream's
// DRA manager, GA and locked on since 1.35): before a pod's sandbox is
// created, the devices its resource claims were allocated are prepared by
// the DRA drivers that serve them.
//
// A pod asks for devices with spec.resourceClaims, each naming a
// ResourceClaim (resourceClaimName) or a template from which the
// resourceclaim controller made one (resourceClaimTemplateName, the made
// claim's name in status.resourceClaimStatuses), and, for an extended
// resource served by DRA, the claim the scheduler made
// (status.extendedResourceClaimStatus). The scheduler allocates each claim
// (status.allocation: devices, each of a driver) and reserves it for the
// pod (status.reservedFor). Manager.PrepareResources does upstream's checks
// of each claim, in upstream's order and words, and fails on the first
// that does not hold:
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
//   - the driver of each allocated device must be registered on the node:
//     "DRA driver NAME is not registered" (ErrDriverNotRegistered).
//
// Every error is wrapped in "prepare dynamic resources: ". The node has no
// registry of DRA drivers yet (no kubelet plugin registration), so every
// claim with an allocated device fails the last check: a pod that has one
// is never run, and cri/podsync holds it with upstream's
// FailedPrepareDynamicResources event at each sync, in ContainerCreating,
// as upstream's kubelet holds a pod whose driver is not on its node. A pod
// without claims, or whose claims allocate no device, needs nothing.
//
// A Manager keeps no state and starts no goroutine; its methods are safe
// for concurrent use. Claims is a one-method interface with a ClaimsFunc
// adapter; an API server's client (examples/apiserver) or a map serves it.
package dra
