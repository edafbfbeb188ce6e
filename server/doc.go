// Package server is the kubelet's HTTP API as a block: what upstream
// kubelet serves on its secure port (10250) to kubectl logs, exec, attach,
// port-forward and cp (through the API server), to metrics-server and to
// monitoring, and on its read-only port (10255), over small interfaces
// that package agent implements. It imports no client-go and no metrics
// library.
//
// Build one with New over the node's parts. Without Options.Auth it is the
// read-only server; with it, the secure server, where every request is
// authenticated, then authorized, first:
//
//	path                                          methods     answer                                    needs
//	/healthz, /healthz/<check>                    GET         "ok", or the checks (?verbose, ?exclude)   Health, Checks
//	/pods                                         GET         v1.PodList of the node's pods              Pods
//	/node                                         GET         v1.Node with the node's status (ours)      Node
//	/stats/summary                                GET, POST   statsv1alpha1.Summary as JSON              Stats
//	/metrics, /metrics/resource, /metrics/probes  GET         the handlers given                         Metrics, ResourceMetrics,
//	/metrics/cadvisor                                                                                        ProbeMetrics, CadvisorMetrics
//	secure server only (the read-only one answers 405 "Debug endpoints are disabled."):
//	/containerLogs/{ns}/{pod}/{container}         GET         the log, flushed as written                PodGetter, Logs
//	/exec/{ns}/{pod}[/{uid}]/{container}          GET, POST   the stream, proxied to the runtime         PodGetter, Streaming
//	/attach/{ns}/{pod}[/{uid}]/{container}        GET, POST   the stream, proxied to the runtime         PodGetter, Streaming
//	/portForward/{ns}/{pod}[/{uid}]               GET, POST   the stream, proxied to the runtime         PodGetter, Streaming
//	/run/{ns}/{pod}[/{uid}]/{container}           POST        the command's output                       PodGetter, Runner
//	/runningpods/                                 GET         v1.PodList of the runtime's pods           RunningPods
//	/configz (secure server only; 404 on the read-only one, as upstream)
//	                                              any         {"kubeletconfig": <the configuration>}    Configz
//	/statusz, /flagz (secure server only; 404 on the read-only one, as upstream)
//	                                              any         text, or JSON/YAML by Accept              ZPages (Flags)
//	/logs/[path][?query=...]                      GET         the log directory, a file, the journal    NodeLogs
//
// A part left nil answers 503 on its paths (Configz, ZPages, ZPages.Flags:
// 404; NodeLogs: 405 "logs endpoint is disabled."). Queries, status codes and error
// texts are upstream's; the path's segments must be valid path segment
// names (no "/", "%", "." or ".."), and a UID in the path must be the
// pod's (or, for a mirror pod, its static pod's), else 404 "pod not found".
//
// Exec, attach and port forward ask the Streamer for the runtime's
// streaming URL (CRI's Exec, Attach and PortForward) and proxy the
// client's upgraded connection, SPDY or WebSocket, to it with
// apimachinery's UpgradeAwareHandler, or redirect the client to it with
// RedirectContainerStreaming. With Options.WebSockets, a WebSocketTranslator,
// the requests of kubectl 1.30 and later that a runtime cannot serve go
// through it instead, as upstream kubelet's do: exec and attach over the v5
// WebSocket protocol, translated to SPDY, and port forwards whose SPDY comes
// tunnelled in a WebSocket (their ports are then in the SPDY streams, not
// in the query). The API server sends those requests on to a node only when
// the node declares ExtendWebSocketsToKubelet in status.declaredFeatures;
// otherwise it translates them itself and speaks SPDY to the node.
//
// Authentication and authorization are upstream's: NewAuthenticator joins
// client certificates (X509Authenticator, verified against the client CA),
// bearer tokens (BearerToken over a TokenAuthenticator, a TokenReview in
// a cluster) and, when enabled, Anonymous; no user is 401 "Unauthorized".
// The Authorizer is asked about nodes/<subresource> of the node, the verb
// from the method: /stats → stats, /metrics and under it (/metrics/resource,
// /metrics/probes, /metrics/cadvisor) → metrics, /logs → log, /pods
// and /runningpods → pods then proxy, /healthz → healthz then proxy,
// /configz → configz then proxy, /statusz → statusz, /flagz → configz,
// /checkpoint → checkpoint, everything else proxy; a request no attribute is allowed is 403
// "Forbidden (user=..., verb=..., resource=nodes, subresource(s)=[...])".
// AlwaysAllow and AlwaysDeny are the trivial authorizers.
//
// TLSConfig builds the TLS configuration from a certificate and key, or a
// self-signed pair it creates under a directory (kubelet.crt, kubelet.key)
// and reuses, and asks clients for certificates when given a client CA.
// Files given are looked at again, at a handshake at most every
// ReloadInterval, and a rotated pair is served without a restart;
// TLSOptions.GetCertificate serves a certificate that rotates (one issued
// by CSR) instead. The client CA file is followed the same way
// (ClientCAFile, upstream's ReloadKubeletClientCAFile): a new bundle is in
// force at the next handshake and request once the interval has passed, and
// a bad or missing file keeps the CAs loaded before.
//
//	cfg, clientCAs, err := server.TLSConfig(server.TLSOptions{CertDir: dir, Host: nodeName, ClientCAFile: caFile})
//	authn, err := server.NewAuthenticator(server.AuthenticatorOptions{ClientCA: clientCAs, Token: tokenReviewer})
//	srv := server.New(server.Options{Pods: a, Node: a, Health: a, PodGetter: a, Logs: a, Streaming: a,
//		Runner: a, Stats: stats, RunningPods: a, TLS: cfg, Auth: &server.Auth{Authenticator: authn, Authorizer: sar}})
//	err = srv.Serve(ctx, listener) // until ctx ends, then a graceful shutdown
//
// New starts nothing. Serve runs an http.Server until its context ends and
// returns once it has shut down, the proxied streams closed. The handlers
// call the interfaces from each request's goroutine: their implementations
// must be safe for concurrent use.
//
// /statusz and /flagz are component-base's zpages as upstream 1.36 serves
// them: a text page for people (its delimiter chosen at random so that
// nobody parses it), or with "Accept: application/json;g=config.k8s.io;
// v=v1beta1;as=Statusz" (or Flagz, v1alpha1 deprecated, YAML too) the
// structured object; any other Accept is 406 with a Status. /logs/ serves
// the node's log directory through an os.Root and, with NodeLogs.Query,
// /logs/?query=<service or file> reads the journal (a Journal, journalctl
// by default) with upstream's parameters, validation and messages.
//
// NewHealthz is upstream kubelet's third server, its healthz port
// (healthzBindAddress:healthzPort, 127.0.0.1:10248 there), which kubeadm's
// kubelet-check, systemd and monitoring poll: /healthz and
// /healthz/<check> only, plain HTTP, no authentication, with the handler
// above and, as upstream's, no check but "ping". Its Run does not fail
// when the port is taken: it logs the failure and tries again every
// RetryPeriod (5s) on its clock until its context ends.
package server
