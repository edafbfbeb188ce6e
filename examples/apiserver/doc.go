// Package apiserver connects kubeletkit's blocks to a Kubernetes API server
// through client-go: the adapters a kubelet needs to join a control plane,
// and Join, which puts them all into a package agent node. It lives in the
// examples module so that the core never depends on client-go; users import
// it as github.com/kubeletkit/kubeletkit/examples/apiserver.
//
// # Joining an agent
//
// Everything an API server gives a kubelet comes into package agent through
// its Options. Join builds every adapter below for one node, Apply fills
// those options, and Run runs the agent with the adapters that have
// goroutines of their own:
//
//	j, err := apiserver.Join(client, "node-1", apiserver.JoinOptions{NodeLabels: labels})
//	if err != nil { ... }              // a missing client, a bad lease duration ...
//	opts := agent.Options{Runtime: rt}
//	if err := j.Apply(&opts); err != nil { ... }
//	a, err := agent.New(opts)
//	if err != nil { ... }
//	err = j.Run(ctx, a) // CheckAccess, then the agent, the pod source, the
//	                    // volume sources' and services' watches, until ctx ends
//
// Run checks the node's permissions before the agent starts, records events
// only while it runs, ends every part when one returns, and returns once
// all have ended. Apply fills the agent's Cluster options, its one seam for
// an API server: Updates, StatusSink, NodeStatusSink, Leases,
// LeaseDuration, Node, ReportHostIPs, MirrorPods, Recorder, Services, and
// VolumeSources unless the caller gave some.
//
// # Many nodes in one process
//
// NewShared builds what nodes joined from one process can share: the
// services' watch, the configMap and secret watches and token requests of
// the volume sources, and an event broadcaster on which each node records
// under its own host. Join every node with JoinOptions{Shared: shared},
// run shared.Run beside them, and give them one clientset (one connection
// to the API server); examples/nodefarm does so for scale tests.
//
// # The adapters
//
//   - PodSource lists and watches the pods bound to the node
//     (spec.nodeName=<node>) with a client-go reflector and sends the
//     complete list as a syncloop.OpSet after the initial list and after
//     every change, on a channel from source.Config.Channel(ctx,
//     syncloop.SourceAPI): the merger turns it into ADD, UPDATE, DELETE,
//     REMOVE and RECONCILE, and the first SET makes the source ready.
//   - StatusSink is status.Sink: GetPod (the mirror pod for a static pod),
//     UpdatePodStatus as a strategic merge patch of pods/status with only
//     what changed and the pod's UID, DeletePod with grace period 0 and a
//     UID precondition; NotFound wraps status.ErrPodNotFound; conflicts and
//     transient errors are retried (Retry).
//   - MirrorPods creates and deletes the mirror pods of static pods;
//     PlanMirrorPods is the pure decision (create missing, recreate
//     outdated, delete orphaned) and Sync carries it out. SyncMirrorPods,
//     Sync bounded by a timeout (30s), is agent.MirrorPods.
//   - NodeSink is status/node's StatusSink and LeaseSink: it registers the
//     Node on the first status (create; on AlreadyExists reconcile the
//     default labels), then patches nodes/status; leases are owned by the
//     Node. With SkipRegistration (--register-node=false) it only patches
//     the status of a Node someone else created.
//   - NodeWatcher is admission.NodeGetter (agent.Options.Cluster.Node):
//     the node's Node as the API server has it, from a watch of that Node
//     alone, so that labels and taints others set count at admission as
//     soon as the server has them; of two reads, the newer resource
//     version wins. NodeSink.Node answers from the sink's own watcher,
//     which NodeSink.Watch runs and each status update's read feeds too;
//     examples/vkprovider, whose Node VK writes, runs one alone.
//   - NewRecorder returns client-go's record.EventRecorder (component
//     "kubelet", host the node), whose Eventf the blocks take as it is.
//     GatedRecorder can be handed to an agent before that recorder runs:
//     it drops events until its Start and after Start's stop.
//   - WatchingSources are volume.ConfigMapSource, SecretSource and
//     TokenSource: configMaps and secrets from a watch of each object the
//     node's pods read (upstream's default watch-based managers), tokens
//     through TokenRequest, bound to the pod. VolumeSources are the same
//     with a TTL cache of GETs instead of watches (upstream's caching
//     managers), for servers or credentials that do not allow watches.
//   - ServiceAccounts are cri/credentialprovider's ServiceAccounts: a
//     service account read with get and a token bound to the pod through
//     TokenRequest, for image credential provider plugins with
//     tokenAttributes (upstream 1.34+); the Node authorizer allows both for
//     the service accounts of the node's pods.
//   - Services is a containerconfig.ServiceLister: every namespace's services,
//     listed and watched, for the service environment variables of
//     containers (KUBERNETES_SERVICE_HOST ...).
//   - CheckAccess reviews the agent's permissions at start and names every
//     denied verb and resource. NotAnswering tells a server that does not
//     answer (Joined.Run starts the node anyway, its static pods run, and
//     every adapter retries with back-off) from one that refuses (Run
//     stops).
//   - KeptSources, and the LocalState options of PodSource, StatusSink and
//     JoinOptions, write the pods bound to the node, the configMaps,
//     secrets and tokens they read and the statuses not yet acknowledged
//     through a package localstate State, and serve them back when the API
//     server does not answer: an agent restarted while cut off runs its
//     kept pods (PodSource.FromLocalState, /healthz's "apisource"), and
//     converges when the server answers (its list replaces the kept pods;
//     StatusSink.Flush sends the kept statuses with the UID precondition).
//     A local state whose file was damaged is a Warning event on the node,
//     EventLocalStateDamaged, when Joined.Run starts.
//     docs/localstate.md is the guide.
//
// # Webhook authentication and authorization
//
// The kubelet API (package server) asks a server.Authenticator who sent a
// request and a server.Authorizer whether that user may do what it asks.
// TokenReviewAuthenticator and SubjectAccessReviewAuthorizer ask the API
// server, as upstream kubelet's --authentication-token-webhook and
// --authorization-mode=Webhook do, with the node's own credentials (the
// Node authorizer lets a node create both reviews):
//
//	authn, _ := apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(), apiserver.TokenReviewOptions{})
//	authz, _ := apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{})
//
// The authenticator reads the token of an "Authorization: Bearer <token>"
// header (or of a WebSocket request's base64url.bearer.authorization.k8s.io
// subprotocol) and creates an authentication.k8s.io/v1 TokenReview of it,
// with no audiences unless TokenReviewOptions.Audiences names some
// (upstream kubelet names none, so the API server's own apply). A request
// without a token is ok false and no error: another authenticator (client
// certificates) or anonymous access may take it. A token the review does
// not authenticate is an error wrapping ErrInvalidToken (with the server's
// reason when it gave one), and a review that could not be made is an
// error: the server answers 401 to both. An authenticated user gets
// system:authenticated among its groups, and its token is removed from the
// request.
//
// The authorizer creates an authorization.k8s.io/v1 SubjectAccessReview of
// the user's name, UID, groups and extra and of the request's resource
// attributes (verb, version v1, resource nodes, the subresource the path
// falls under, the node's name; SubjectAccessReviewSpec builds it). Allowed
// is DecisionAllow; denied, DecisionDeny; neither (a user RBAC grants
// nothing), DecisionNoOpinion, which the server answers 403 as upstream; a
// review that could not be made is an error, answered 500.
//
// Both keep answers as upstream's caches do: an answer about a token 2m
// (--authentication-token-webhook-cache-ttl), whether it authenticated or
// not, keyed by an HMAC of the token so that no token is kept; an allowed
// review 5m and any other 30s
// (--authorization-webhook-cache-authorized-ttl and -unauthorized-ttl),
// keyed by the review's spec; at most 8192 of each, the least recently
// used dropped first. Errors, and refusals that carry the server's reason,
// are not kept. Requests with the same token share one TokenReview. A
// review that fails for a transient reason (a reset connection, an
// internal error, a timeout, throttling) is tried again, five times in all,
// 500ms and then 1.5 times longer each time (DefaultWebhookBackoff). The
// options' Clock drives the caches and the retries.
//
// # Driving the adapters one by one
//
//	client := kubernetes.NewForConfigOrDie(restConfig)
//	if err := apiserver.CheckAccess(ctx, client, node); err != nil { return err }
//	cfg := source.NewConfig(source.ConfigOptions{NodeName: node})
//	src, _ := apiserver.NewPodSource(client, node, cfg.Channel(ctx, syncloop.SourceAPI), apiserver.PodSourceOptions{})
//	go src.Run(ctx)
//	sink, _ := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{})     // status.Options.Sink
//	nodes, _ := apiserver.NewNodeSink(client, node, apiserver.NodeSinkOptions{})  // node.Options.Sink and Leases
//	rec, stop := apiserver.NewRecorder(client, node)                              // every block's Recorder
//	defer stop()
//	vols, _ := apiserver.NewWatchingSources(client, apiserver.WatchingSourcesOptions{}) // volume.Options.Sources: vols.Sources()
//	go vols.Run(ctx)
//
// # Certificates by CSR
//
// Bootstrap gets a node holding only a bootstrap token its client
// certificate (a kubernetes.io/kube-apiserver-client-kubelet CSR), stores it
// under the cert dir and writes the kubeconfig, retrying a refused token
// (logged at Error, naming the bootstrap kubeconfig) or a denied CSR with
// back-off until its context ends. The CSR's key waits in the cert dir
// (PendingKeyFile) and names the CSR, so a node restarted while its CSR is
// pending waits for the same one. NewClientCertificateManager and
// NewServingCertificateManager are client-go's certificate managers for the
// client certificate and the kubelet API's serving certificate
// (kubernetes.io/kubelet-serving, the node's addresses as SANs);
// ServingCertificate hands the latter to server.TLSOptions.GetCertificate.
// NewClientRotation puts a client's connections on the client certificate
// manager's certificate: closed and dialled again when it rotates, and
// closed (logged at Error, no exit) when it expires with none in its place;
// its Run reads the manager every 10s until its context ends.
// The managers' Start runs client-go's goroutines until Stop, and a manager
// waiting for its next rotation ends only at that deadline.
//
// # Threading
//
// Constructors and Join start no goroutine, except NewRecorder, whose
// broadcaster runs until its stop function is called. PodSource.Run runs the
// reflector in the caller's goroutine (with a LocalState, and one goroutine
// that serves it when the first list fails) and returns when ctx has ended
// and both have stopped. WatchingSources.Run starts one reflector goroutine
// per watched object and returns once they have all ended. NodeWatcher.Run
// (and NodeSink.Watch) runs its reflector in the caller's goroutine until
// ctx ends. Joined.Run runs the agent and the adapters Join made (and, unless
// the adapters are shared, the watch of the node's own Node) in goroutines of
// its own and returns once they have ended. TokenReviewAuthenticator reviews a token in a goroutine
// that every request with that token waits for, bounded by 30s rather than
// by the first request's deadline. Every other type is safe for concurrent
// use and does its I/O in the caller's goroutine, bounded by the caller's
// ctx.
//
// # Testing
//
// Every adapter takes a kubernetes.Interface, so tests use client-go's
// k8s.io/client-go/kubernetes/fake clientset (its tracker applies merge and
// strategic merge patches but ignores delete preconditions: check the
// DeleteOptions with a reactor; reactors on "create" answer TokenReviews
// and SubjectAccessReviews). PodSourceOptions.ListerWatcher takes a
// test's own lister-watcher (watch.FakeWatcher) to end watches at will.
// Joined.Run takes any Agent (NodeName and Run), so a test can stand in for
// package agent; the package's own tests also run a whole agent on the fake
// runtime against the fake clientset inside testing/synctest. The tests
// against a real kube-apiserver (build tag apiserver, names matching
// APIServer; with tag containerd too, on containerd) need the control plane
// of hack/controlplane-start.sh and its env file.
package apiserver
