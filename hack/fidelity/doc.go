// Command fidelity records the pod statuses a kubelet serves on its
// read-only /pods endpoint over time, and compares two recordings field by
// field: upstream kubelet's and minikubelet's, for the same manifests on the
// same containerd (hack/fidelity.sh runs both).
//
//	fidelity record --url http://127.0.0.1:10255/pods --duration 60s --out up.json
//	fidelity compare up.json mini.json
//
// A recording keeps, per pod and per sample, what a user compares: phase,
// reason and message; each condition's status, reason and message; each
// container's state (waiting, running or terminated, with reason, message,
// exit code and signal), last termination state, ready, started and restart
// count; the QoS class; whether the pod has an IP, a host IP and a start
// time. Timestamps, IDs and IPs differ between runs by nature and are left
// out, and the pod's UID in a message reads <uid>. compare prints the differences of the last samples, then, per
// container, when each restart happened and, per pod, when it turned
// Running, Ready and terminal, on both sides; it exits 1 when the last
// samples differ in more than a restart count off by one (timing: each
// kubelet jitters its retries).
package main
