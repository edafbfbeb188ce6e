// Command vknode is a virtual-kubelet node whose pods run on a kubeletkit
// agent: virtual-kubelet's nodeutil.NewNode (its pod controller, node
// controller and Lease) with examples/vkprovider as the provider, on
// containerd or CRI-O, or on the agent's embedded fake runtime.
//
//	vknode --kubeconfig ~/.kube/config --node-name vk-node \
//	    [--container-runtime-endpoint unix:///run/containerd/containerd.sock] \
//	    [--root-dir /var/lib/vknode] [--pod-logs-dir /var/log/pods] \
//	    [--port 10250 --client-ca-file /etc/kubernetes/pki/ca.crt] [--node-ip 192.0.2.7] [-v]
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
//	--root-dir DIR                     pod data, logs, the serving certificate (default $TMPDIR/vknode)
//	--pod-logs-dir DIR                 the containers' log files (default ROOT-DIR/logs)
//	--port N                           virtual-kubelet's kubelet API over TLS (0, the default: none)
//	--client-ca-file FILE              CA bundle of the client certificates the kubelet API accepts (needs --port)
//	--node-ip IP                       the node's address (default: the machine's first non-loopback one)
//	-v                                 debug logs, virtual-kubelet's included
//
// With --port, virtual-kubelet serves the kubelet API (logs, exec, attach,
// port-forward, /stats/summary, /metrics/resource, /pods) through the
// provider, on every address, with a self-signed certificate for the node
// made once under ROOT-DIR/pki, and the Node's daemonEndpoints name the
// port. Requests are authenticated by a client certificate of
// --client-ca-file (read once, at start) or a bearer token (TokenReview),
// and authorized by SubjectAccessReview: virtual-kubelet's WebhookAuth, as
// upstream kubelet's x509 and webhook authentication. With the cluster's
// client CA, kubectl logs, exec, attach, port-forward and cp, and the
// node's stats through the API server's proxy, work as with any node
// (hack/kubectl-e2e.sh checks them).
//
// virtual-kubelet lists and watches the configMaps, secrets and services
// of every namespace, which the Node authorizer refuses a node's
// credentials: give it credentials that may (a cluster role), or expect
// its reflectors to log the refusals. The agent reads the configMaps,
// secrets, tokens and services its pods need itself, as a kubelet.
package main
