// Package validation is the API server's defaulting and validation of a
// pod, for the pods a kubelet takes from no API server: the static pods of a
// manifest directory or URL (package syncloop/source), or pods a program
// builds itself. An API server defaults a pod it is asked to create and
// refuses one that breaks its rules; a static pod meets neither, so
// upstream's kubelet applies the same defaults and the same validation to
// every manifest it reads. This package does that for the fields a kubelet
// acts on, with the API server's field paths and messages, as of
// Kubernetes 1.36 with its default feature gates.
//
// # Driving it
//
// Default first, then validate: ValidatePod requires what DefaultPod sets
// (a grace period, restart and DNS policies, each container's pull and
// termination message policies, port protocols, ...), as the API server
// validates the defaulted object.
//
//	validation.DefaultPod(pod) // in place; idempotent
//	if err := validation.ValidatePod(pod); err != nil {
//		// errors.Is(err, validation.ErrInvalidPod)
//	}
//
// A static pod also gets a name, a namespace and a UID from its source
// between the two steps (source.ApplyStaticDefaults); source.ReadManifest
// runs the three.
//
// # What it checks
//
// The metadata (name, namespace, labels, annotations and their total
// size); the pod's numbers (active deadline, probe periods and thresholds,
// sleep hooks within the grace period, ports, user and group IDs, file
// modes, quantities); its enums (restart and DNS policies, pull and
// termination message policies, protocols, mount propagation, the OS, ...);
// its names (containers and volumes unique and DNS labels, every mount
// naming a volume, env vars, ports, hostname, readiness gates, ...); the
// volumes (exactly one source, and within the sources a kubelet mounts:
// paths and item keys without "..", modes, sizes); each container's
// resources, probes and lifecycle handlers (exactly one handler, each
// complete), restart policy and rules, and security context (seccomp and
// AppArmor profiles among them); init containers (hooks and probes only on
// sidecars); and, as on create, no ephemeral containers. What it leaves
// out, and why, is in docs/podspec-validation.md: mostly scheduling fields
// and what comes from the node.
//
// DefaultPod sets only the defaults a kubelet relies on (listed in its
// comment), where they are unset; it never names a pod, nor gives it a UID
// or a status.
//
// # Errors
//
// ValidatePod lists every problem it finds, in the API server's order, in
// one error that wraps ErrInvalidPod and names the pod (PodRef) and each
// problem's field by its path in the pod's JSON, with index and key:
//
//	invalid pod default/web: [spec.volumes[0].hostPath.path: Invalid value: "/srv/../etc": must not contain '..', spec.containers[0].volumeMounts[0].name: Not found: "date", spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0]
//
// The text after the field path is the API server's own ("Required
// value", "Invalid value: ...", "Unsupported value: ...: supported values:
// ...", "Forbidden: ...", "Duplicate value", "Not found"), so a manifest
// refused here is refused by an API server with the same words. Where the
// API server's path has a quirk (a subPath error names
// volumeMounts.subPath with no index), the quirk is kept.
//
// # Threading
//
// Everything here is a pure function of its argument. ValidatePod does not
// modify the pod and may run on one pod from many goroutines; DefaultPod
// writes the pod it is given, so its caller owns it.
//
// # Testing with it
//
// There is nothing to fake: tests call the functions on pods they build.
// This package's tests break one field of a valid pod at a time and pin
// every error's path and message; FuzzValidatePod feeds it arbitrary pods.
package validation
