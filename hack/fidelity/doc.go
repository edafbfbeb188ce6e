// Command fidelity records the pod statuses a kubelet reports over time, and
// compares two recordings field by field: upstream kubelet's and
// minikubelet's, for the same manifests on the same containerd
// (hack/fidelity.sh runs both, as static pods and through an API server).
//
//	fidelity record --url http://127.0.0.1:10255/pods --duration 60s --out up.json
//	fidelity record --server https://127.0.0.1:6443 --token T --ca ca.crt --node kk-node --out up.json
//	fidelity create --server ... --token T --ca ca.crt --node kk-node [--objects objects/] manifests/
//	fidelity clean --server ... --token T --ca ca.crt --node kk-node
//	fidelity compare up.json mini.json
//
// record reads a kubelet's read-only /pods, or with --server the node's pods
// on an API server; with --delete-from it deletes, on schedule, the pods
// whose manifests are annotated fidelity.kubeletkit.io/delete-after
// (removing a static pod's manifest, or through the API server). create waits for the Node to be Ready, creates (or
// replaces) the ConfigMaps and Secrets of --objects, and creates a pod of
// each manifest bound to it, those annotated
// fidelity.kubeletkit.io/create-after that long after the others (pods
// whose admission depends on the pods admitted before them); clean deletes the node's pods (grace 0),
// waits until they are gone, and deletes the Node and its Lease. They speak
// plain HTTP, so that the core module stays free of client-go.
//
// A recording keeps, per pod and per sample, what a user compares: phase,
// reason and message; each condition's status, reason and message; each
// container's state (waiting, running or terminated, with reason, message,
// exit code and signal), last termination state, ready, started and restart
// count; the QoS class; whether the pod has an IP, a host IP and a start
// time. Timestamps, IDs and IPs differ between runs by nature and are left
// out, and the pod's UID in a message reads <uid>. compare prints the
// differences of the last samples, then, per pod, when each phase, Ready,
// container state and restart first appeared on both sides; it exits 1 when
// the last samples differ in more than timing: each kubelet jitters its
// retries, so a restart count off by one, a container at another step of
// the image pull retry cycle, or a crash-looping container seen running on
// one side and in CrashLoopBackOff on the other (with the same last
// termination, restart counts at most one apart), or backing off on both
// sides one restart apart (so the delay in the message is one step apart),
// is reported but not counted.
package main
