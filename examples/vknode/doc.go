// Command vknode is a virtual-kubelet node whose pods run on a kubeletkit
// agent: virtual-kubelet's nodeutil.NewNode (its pod controller, node
// controller and Lease) with examples/vkprovider as the provider, on
// containerd or CRI-O, or on the agent's embedded fake runtime.
//
//	vknode --kubeconfig ~/.kube/config --node-name vk-node \
//	    [--container-runtime-endpoint unix:///run/containerd/containerd.sock] \
//	    [--root-dir /var/lib/vknode] [--pod-logs-dir /var/log/pods] \
//	    [--port 10250 --client-ca-file /etc/kubernetes/pki/ca.crt] [--node-ip 192.0.2.7] \
//	    [--bootstrap-kubeconfig bootstrap-kubelet.conf --cert-dir /var/lib/vknode/pki] \
//	    [--rotate-server-certificates | --tls-cert-file F --tls-private-key-file K] \
//	    [--cluster-dns 10.96.0.10 --cluster-domain cluster.local] \
//	    [--cgroups-per-qos] [--eviction-hard memory.available<100Mi,...] [-v]
//
// Build it from examples/ with an output name, as the directory has the
// command's name: go build -o bin/vknode ./vknode (a plain go build ./vknode
// fails with "already exists and is a directory"), or go run ./vknode.
//
// It joins the API server with the kubeconfig's credentials: virtual-kubelet
// registers the Node (labels kubernetes.io/hostname, kubernetes.io/os,
// kubernetes.io/arch and their beta twins, type=virtual-kubelet; no taint,
// so pods need no toleration), renews its Lease and watches the pods bound
// to it; the agent runs them, and the Node turns Ready with the agent's
// status once the agent is healthy. Pods reach the statuses they reach
// under examples/minikubelet, except where virtual-kubelet decides
// otherwise (examples/vkprovider's doc lists where). SIGINT and SIGTERM
// stop it; containers are left running, as a kubelet's restart leaves them,
// for the next run to adopt.
//
// Flags:
//
//	--kubeconfig PATH                  the API server and credentials (required)
//	--node-name NAME                   the Node's name (required)
//	--container-runtime-endpoint URL   the CRI runtime; empty: the embedded fake runtime
//	--root-dir DIR                     pod data and logs (default $TMPDIR/vknode)
//	--pod-logs-dir DIR                 the containers' log files (default ROOT-DIR/logs)
//	--port N                           virtual-kubelet's kubelet API over TLS (0, the default: none)
//	--client-ca-file FILE              CA bundle of the client certificates the kubelet API accepts (needs --port)
//	--node-ip IP                       the node's address (default: the machine's first non-loopback one)
//	--bootstrap-kubeconfig PATH        a bootstrap token's kubeconfig: the node's client certificate by CSR
//	--cert-dir DIR                     the node's certificates (default ROOT-DIR/pki)
//	--rotate-server-certificates       the kubelet API's certificate by CSR (needs --port)
//	--tls-cert-file FILE               the kubelet API's certificate, with --tls-private-key-file (needs --port)
//	--tls-private-key-file FILE        its key
//	--cluster-dns IP[,IP]              the cluster's DNS servers, for ClusterFirst pods (repeatable)
//	--cluster-domain DOMAIN            the cluster's DNS domain (cluster.local in most clusters)
//	--cgroups-per-qos                  upstream's pod cgroup hierarchy (needs root and --container-runtime-endpoint)
//	--eviction-hard SIGNAL<VALUE,...   hard eviction thresholds (unset: upstream's defaults; empty: none)
//	-v                                 debug logs, virtual-kubelet's included
//
// The flags have upstream kubelet's names and meanings. --cluster-dns and
// --cluster-domain are the agent's Node.ClusterDNS and Node.ClusterDomain,
// as minikubelet's: a ClusterFirst pod's resolv.conf names those servers
// and searches <namespace>.svc.<domain>, svc.<domain> and <domain> before
// the host's domains; without --cluster-dns it gets the host's resolver.
//
// # Joining as a node
//
// With --bootstrap-kubeconfig, vknode joins as kubeadm join joins a
// kubelet, with examples/apiserver's Bootstrap (minikubelet's): when
// --kubeconfig is missing or its client certificate expired, it sends a
// kubernetes.io/kube-apiserver-client-kubelet CSR for
// CN=system:node:<node-name>, O=system:nodes with the bootstrap token,
// waits for it to be approved and issued, keeps the pair under --cert-dir
// (kubelet-client-current.pem) and writes --kubeconfig naming it. It then
// acts as that node: the Node authorizer and the NodeRestriction admission
// treat it as a kubelet (its own Node, Lease and pods, the objects its
// pods use). The client certificate is not renewed while vknode runs (a
// start after it expired asks for a new one), unlike upstream's
// --rotate-certificates.
//
// # The kubelet API
//
// With --port, virtual-kubelet serves the kubelet API (logs, exec, attach,
// port-forward, /stats/summary, /metrics/resource, /metrics/probes, /pods) through the
// provider, on every address, and the Node's daemonEndpoints name the
// port. Its certificate is --tls-cert-file's (read again when the files
// change); with --rotate-server-certificates, one by a
// kubernetes.io/kubelet-serving CSR for the node's name and addresses
// (CERT-DIR/kubelet-server-current.pem, served once issued, asked for again
// before it expires or when the addresses change), which an API server
// that verifies kubelets (--kubelet-certificate-authority) accepts once the
// cluster signed it; otherwise a self-signed one for the node's name and
// --node-ip made once under --cert-dir, which such an API server refuses.
// Requests are authenticated by a client certificate of
// --client-ca-file (read once, at start) or a bearer token (TokenReview),
// and authorized by SubjectAccessReview: virtual-kubelet's WebhookAuth, as
// upstream kubelet's x509 and webhook authentication. With the cluster's
// client CA, kubectl logs, exec, attach, port-forward and cp, and the
// node's stats through the API server's proxy, work as with any node
// (hack/kubectl-e2e.sh checks them).
//
// virtual-kubelet lists and watches the configMaps and secrets of every
// namespace, which the Node authorizer refuses a node's credentials: with
// a node's certificate its reflectors log the refusals and retry, and
// nothing waits for them (they only serve VK's own resolution of
// environment variables, which vknode turns off). The agent reads the
// configMaps, secrets, tokens and services its pods need itself, as a
// kubelet, which a node may.
package main
