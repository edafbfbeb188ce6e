// Command minikubelet is a node agent composed of the kubeletkit blocks: it
// runs static pods from a manifest directory or URL on a CRI runtime, with
// probes, restarts with backoff, and pod statuses served over HTTP; with
// --kubeconfig it joins an API server as a kubelet does.
//
//	go run ./examples/minikubelet
//
// (A binary: from examples/, go build -o bin/minikubelet ./minikubelet; the
// directory has the command's name, so a plain go build ./minikubelet fails
// with "already exists and is a directory".)
//
// With no flags it runs the embedded fake runtime (no containerd, no root),
// the pods in examples/minikubelet/manifests, the kubelet API on port
// 10250 and, as upstream kubelet, the healthz port that kubeadm join
// waits for on 127.0.0.1:10248 (--healthz-port, --healthz-bind-address;
// --healthz-port 0 turns it off: a port in use is only logged and tried
// again every 5s, so give each of several minikubelets on one machine 0 or
// a port of its own). The read-only server, which answers without authentication (and
// shows the pods' environment), is off unless asked for, as upstream's
// KubeletConfiguration has it; with --read-only-port 10255:
//
//	curl localhost:10255/healthz   # ok while the PLEG relists in time
//	curl localhost:10255/pods      # a v1.PodList with live statuses
//	curl localhost:10255/node      # a v1.Node: conditions, capacity, addresses
//	curl localhost:10255/stats/summary  # the Summary API: CPU, memory, disks
//	curl localhost:10255/metrics   # Prometheus exposition (examples/prometheus)
//	curl localhost:10255/metrics/probes  # the probes' (prober_probe_total ...)
//	curl localhost:10255/metrics/cadvisor  # container_*, machine_* from the CRI stats
//
// The kubelet API (package server) serves container logs, exec, attach,
// port-forward, the stats and /configz over TLS, with a self-signed
// certificate made once under ROOT-DIR/pki (or --tls-cert-file and
// --tls-private-key-file). /configz is upstream's
// {"kubeletconfig": <v1beta1.KubeletConfiguration>}, what the node e2e
// suite reads: the merged configuration minikubelet runs with (below),
// with what the node does where it accepts an upstream default it does not
// act on (no pprof, no swap check, unbounded
// image pulls), the TLS files it serves, the authentication and
// authorization it does, and the QoS cgroups as it runs them: on a fake
// runtime (the embedded one, or examples/fakecri over a socket unless
// --cgroups-per-qos is given) cgroupsPerQOS false,
// enforceNodeAllocatable none and podPidsLimit -1, as its containers are
// no processes.
//
// Configuration: --config is upstream's KubeletConfiguration file
// (kubelet.config.k8s.io/v1beta1, YAML or JSON: kubeadm's and kind's
// /var/lib/kubelet/config.yaml), --config-dir its drop-in directory (the
// *.conf files, each merged over the result in lexical order), as upstream
// kubelet takes them: flags given on the command line over the drop-ins
// over the file over upstream's defaults. Package kubeletconfig loads,
// defaults, validates (upstream's messages) and converts it to the agent's
// options, and refuses by name every field the node does not implement
// (docs/kubeletconfig.md has the table); minikubelet refuses in addition,
// without --kubeconfig, what needs an API server (rotateCertificates,
// serverTLSBootstrap, --bootstrap-kubeconfig, webhook
// authentication and authorization, which upstream's defaults turn on:
// a standalone file says authentication.webhook.enabled false and
// authorization.mode AlwaysAllow, as upstream kubelet needs too). Without
// --config, minikubelet's own defaults stand in for the file: the embedded
// fake runtime, logs under ROOT-DIR/logs, no webhooks unless joined, the
// example manifests.
// Every request is authenticated, by a client certificate of
// --client-ca-file (the API server's kubelet-client certificate), a bearer
// token (--authentication-token-webhook: TokenReview), or as
// system:anonymous with --anonymous-auth; and authorized
// (--authorization-mode: Webhook, SubjectAccessReview, the default with
// --kubeconfig; AlwaysAllow otherwise). Joined to an API server, the node
// reports the API's port in status.daemonEndpoints, so kubectl logs, exec,
// attach, port-forward and cp reach it. As upstream kubelet 1.36, it serves
// kubectl's WebSockets itself (exec, attach and cp over v5.channel.k8s.io,
// port-forward's SPDY tunnel) with upstream's translator
// (examples/websockets) and declares ExtendWebSocketsToKubelet in the
// Node's status.declaredFeatures, so that the API server sends them on
// instead of translating them to SPDY itself;
// --extend-websockets-to-kubelet=false turns both off. The agent declares
// the other features its blocks implement (status/node.DeclaredFeatures).
//
// It prints a line whenever a pod's phase or container states change.
// SIGINT or SIGTERM stops the agent and leaves the containers running, as a
// kubelet restart does; the next start adopts them. With
// --shutdown-grace-period (upstream's shutdownGracePeriod, 0s: off), when
// systemd-logind says the machine is shutting down (PrepareForShutdown,
// under a delay inhibitor lock, as upstream's kubelet) the node turns
// NotReady, refuses new pods (NodeShutdown), and terminates its pods lowest
// priority first, critical pods last within
// --shutdown-grace-period-critical-pods, each Failed with reason
// Terminated, before it lets the machine halt. With --shutdown-signal a
// signal is the trigger instead, for machines without logind, and
// minikubelet exits once the pods are down. With --runonce it starts
// the pods, waits until each runs (or ends), prints their statuses as JSON
// and exits.
//
// Under a systemd unit, as upstream's kubelet, it sends READY=1 once the
// agent has started (so Type=notify works), and with WatchdogSec= it feeds
// systemd's watchdog every half timeout while /healthz's checks pass
// (package watchdog): a node whose sync loop is stuck is killed and
// restarted by the unit's Restart=. A WatchdogSec= of 1s or less stops it
// at start ("configure watchdog timeout too small").
//
// Flags: --container-runtime-endpoint (a containerd or CRI-O socket; empty
// means the embedded fake), --pod-manifest-path, --manifest-url,
// --object-manifest-path (ConfigMaps and Secrets for pods' volumes),
// --kubeconfig (join an API server; one that does not answer at start,
// refused connections, timeouts, 5xx, does not hold the node back: its
// static pods run, it retries with back-off and registers the Node when
// the server answers, as upstream kubelet; a refusal, 401, 403 or a denied
// permission, stops it with an error naming what was refused;
// docs/apiserver.md), --register-node, --node-labels,
// --node-status-update-frequency, --node-lease-duration-seconds,
// --kube-api-qps, --kube-api-burst (50 and 100, upstream's),
// --register-with-taints, --provider-id (both at registration, with
// --kubeconfig), --max-pods (110), --pod-max-pids (upstream's podPidsLimit,
// -1: none; with --cgroups-per-qos, each pod cgroup's pids limit),
// --cpu-cfs-quota-period (upstream's cpuCFSQuotaPeriod, 100ms: the CFS
// period of containers that limit CPU and of the pod cgroups),
// --serialize-image-pulls (true) and
// --max-parallel-image-pulls, --image-credential-provider-config and
// --image-credential-provider-bin-dir (upstream's image credential
// provider plugins, package cri/credentialprovider: both or neither; the
// configuration a file or a directory of them, read and checked at start,
// its plugins found in the directory by their names; docs/credentialprovider.md),
// --config, --config-dir (imagePullCredentialsVerificationPolicy and
// preloadedImagesVerificationAllowlist, as upstream, come only from the
// file: a pod whose image the node pulled with other pods' credentials must
// show its own, the records kept under ROOT-DIR/image_manager;
// featureGates KubeletEnsureSecretPulledImages false keeps none;
// docs/feature-gates.md),
// --node-name, --hostname-override (the node's name, as upstream's),
// --node-ip, --cluster-dns (comma-separated, repeatable),
// --cluster-domain, --resolv-conf (/etc/resolv.conf, upstream's default;
// "" for none; pods' DNS as upstream's: docs/podsync.md#dns),
// --root-dir (/tmp/minikubelet; on the embedded fake runtime without
// --kubeconfig, a fresh directory per run, removed at exit, since that
// runtime's containers die with the process: a root kept from an earlier
// run would show its pods' logs as restarts), --address, --port,
// --read-only-port,
// --tls-cert-file, --tls-private-key-file (reloaded when they change),
// --cert-dir, --client-ca-file,
// --bootstrap-kubeconfig (a bootstrap token: when --kubeconfig is missing
// or its client certificate is not valid, a client certificate by a
// kubernetes.io/kube-apiserver-client-kubelet CSR, kept under --cert-dir
// as kubelet-client-current.pem and named by a --kubeconfig it writes;
// refusals retried with back-off, a refused token logged at Error; a
// pending CSR's key kept there as kubelet-client.key.tmp, so that a
// restart waits for the same CSR), --rotate-certificates
// (rotateCertificates: renewed by CSR before it expires, the API server
// connections closed and dialled again with each new one; on expiry with
// none in its place, closed and logged at Error, the node going on with its
// pods; --kubeconfig must name CERT-DIR/kubelet-client-current.pem),
// --rotate-server-certificates (serverTLSBootstrap: the kubelet API's
// certificate by a kubernetes.io/kubelet-serving CSR for the node's
// addresses (its name and --node-ip until the node's status has some),
// renewed and served without a restart; the kubelet API refuses
// handshakes until it is issued),
// --anonymous-auth, --authentication-token-webhook, --authorization-mode,
// --extend-websockets-to-kubelet,
// --container-log-max-size, --container-log-max-files (10Mi and 5,
// upstream's), --runonce, --evented-pleg,
// --eviction-hard, --eviction-soft, --eviction-soft-grace-period,
// --eviction-minimum-reclaim (upstream's syntax and defaults),
// --image-gc-high-threshold, --image-gc-low-threshold,
// --minimum-image-ttl-duration, --shutdown-grace-period,
// --shutdown-grace-period-critical-pods, --shutdown-signal,
// --device-plugin-dir (ROOT-DIR/device-plugins
// by default: device plugins register there and their resources join the
// node's capacity; empty turns them off; the devices pods hold are
// reported, as by upstream, on ROOT-DIR/pod-resources/kubelet.sock, the
// pod-resources API, served unless --runonce), --local-state (with
// --kubeconfig, ROOT-DIR/localstate.db by default: the node's local state,
// package localstate, so that a minikubelet restarted while the API server
// does not answer runs the pods it kept, says so in the logs and in
// /healthz?verbose's "apisource" line, and converges when the server
// answers; empty keeps nothing; a damaged file is moved aside, and the
// node starts without it; docs/localstate.md), --local-state-key-file (the
// key that seals the secrets and tokens it keeps; without it it keeps
// none), -v (debug logs).
//
// The program only turns flags and the configuration into options
// (kubeletconfig.Convert does the converting): the node itself is package
// agent (github.com/kubeletkit/kubeletkit/agent), joined to the API server by
// examples/apiserver (Join, Apply, then Joined.Run in place of Agent.Run),
// with its metrics from examples/prometheus (Metrics and Handler in the
// options, RegisterNode once the agent is built). A custom agent composes
// the same three.
package main
