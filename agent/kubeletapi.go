package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

// APIOptions configure the kubelet API (package server's secure server,
// upstream's port 10250): container logs, exec, attach, port-forward, the
// stats summary, the pods, health and metrics, over TLS, every request
// authenticated and authorized.
type APIOptions struct {
	// Listen is the API's address (":10250"); ":0" picks a free port
	// (APIAddr tells which). Its port goes into the node's
	// status.daemonEndpoints, where the API server finds it for kubectl
	// logs and exec.
	Listen string
	// TLS says where the serving certificate comes from and which CA
	// signs client certificates (--tls-cert-file, --tls-private-key-file,
	// --client-ca-file). With no files, no CertDir and no GetCertificate,
	// a self-signed certificate for the node's name and IPs is made once
	// under RootDir/pki and reused. Host and IPs default to the node's;
	// Clock and Logger to the agent's. GetCertificate serves a rotating
	// certificate (examples/apiserver's, issued by CSR); files given are
	// reloaded when they change, ClientCAFile too (a new CA accepted, a
	// removed one refused, without a restart).
	TLS server.TLSOptions
	// Authenticator checks credentials other than client certificates:
	// examples/apiserver's TokenReview authenticator for bearer tokens
	// (--authentication-token-webhook). Nil means client certificates
	// only.
	Authenticator server.Authenticator
	// Anonymous lets requests without credentials in as system:anonymous
	// (--anonymous-auth; off, as upstream's configuration defaults it).
	Anonymous bool
	// Authorizer decides what each user may do (examples/apiserver's
	// SubjectAccessReview authorizer: --authorization-mode=Webhook). Nil
	// allows every authenticated user (--authorization-mode=AlwaysAllow).
	Authorizer server.Authorizer
	// Configz answers /configz with the node's configuration: a value
	// that encodes as k8s.io/kubelet/config/v1beta1's
	// KubeletConfiguration, which the core does not import (the module
	// kubeletconfig does; examples/minikubelet serves its merged
	// configuration). Nil: no /configz.
	Configz server.ConfigProvider
	// WebSockets serves kubectl's WebSocket protocols (exec and attach over
	// v5.channel.k8s.io, port forwards tunnelled in a WebSocket) next to
	// the runtime, as upstream kubelet does: examples/websockets has
	// upstream's translator. The API server sends them to the node only
	// when it declares ExtendWebSocketsToKubelet
	// (Options.Node.DeclaredFeatures); otherwise it translates them
	// itself, one hop further from the runtime. Nil: the kubelet API
	// proxies them to the runtime as any other stream.
	WebSockets server.WebSocketTranslator
	// Flags serves /flagz with the program's command-line flags
	// (examples/minikubelet passes its parsed flag set through
	// server.FlagSetReader). Nil: no /flagz, as upstream kubelet without a
	// flag reader. /statusz is always served: the agent's start on its
	// clock, BinaryVersion and EmulationVersion.
	Flags server.FlagReader
	// BinaryVersion and EmulationVersion are /statusz's versions; empty:
	// "0.0.0" and none (see server.ZPages).
	BinaryVersion, EmulationVersion string
	// NodeLogDir is the node's log directory, served under /logs/
	// (upstream's /var/log/ with enableSystemLogHandler, its default).
	// Empty: /logs/ answers 405 "logs endpoint is disabled.".
	NodeLogDir string
	// NodeLogQuery turns on /logs/?query= (enableSystemLogQuery with the
	// NodeLogQuery gate): a service's journal through Journal (nil:
	// journalctl from PATH) or a file under NodeLogDir.
	NodeLogQuery bool
	Journal      server.Journal
}

// ExtendWebSocketsToKubelet is the node feature that tells the API server
// to send kubectl's WebSockets on to the node's kubelet API instead of
// translating them to SPDY itself: upstream kubelet 1.36 declares it, and
// serves them as APIOptions.WebSockets does. The agent declares it when
// APIOptions.WebSockets is set (declaredFeatures).
const ExtendWebSocketsToKubelet = podspec.NodeFeatureExtendWebSocketsToKubelet

// declaredFeatures are the features the node declares in its status:
// those the blocks it runs implement (node.DeclaredFeatures: the kubelet
// API's WebSockets when APIOptions.WebSockets serves them; the resize of
// init containers and of pod-level resources, since the allocation block,
// podsync and the pod cgroups' resize always run; the
// restart rule action RestartAllContainers, which podsync's ResetPod and
// the status block always carry out),
// then the caller's Options.Node.DeclaredFeatures. The node status sorts
// them and lists each once.
func declaredFeatures(opts Options) []string {
	api := opts.HTTP.API
	return append(node.DeclaredFeatures(node.Capabilities{
		WebSockets:           api != nil && api.WebSockets != nil,
		InPlaceResize:        true,
		PodLevelResize:       true,
		RestartAllContainers: true,
	}), opts.Node.DeclaredFeatures...)
}

// listenAPI opens the kubelet API's listener and reports its port in the
// node's status.
func (a *Agent) listenAPI() error {
	if a.opts.HTTP.API == nil || a.opts.HTTP.API.Listen == "" {
		return nil
	}
	l, err := net.Listen("tcp", a.opts.HTTP.API.Listen)
	if err != nil {
		return fmt.Errorf("agent: kubelet API: %w", err)
	}
	a.apiListener = l
	if _, port, err := net.SplitHostPort(l.Addr().String()); err == nil {
		if p, err := strconv.ParseInt(port, 10, 32); err == nil {
			a.node.SetKubeletPort(int32(p))
		}
	}
	return nil
}

// APIAddr returns the kubelet API's address once Run listens, else nil.
func (a *Agent) APIAddr() net.Addr {
	if a.apiListener == nil {
		return nil
	}
	return a.apiListener.Addr()
}

// healthChecks are /healthz's checks beyond ping: the sync loop and the
// PLEG, as upstream's syncloop check and its PLEG health, then
// Options.HTTP.HealthChecks.
func (a *Agent) healthChecks() []server.HealthCheck {
	return append([]server.HealthCheck{
		{Name: "syncloop", Check: func(*http.Request) error { return a.loop.Healthy() }},
		{Name: "pleg", Check: func(*http.Request) error {
			if ok, err := a.pleg.Healthy(); !ok {
				return err
			}
			return nil
		}},
	}, a.opts.HTTP.HealthChecks...)
}

// watchdogChecks are the checks before each watchdog notification: those
// of /healthz, as upstream's, called without a request.
func (a *Agent) watchdogChecks() []watchdog.Check {
	var checks []watchdog.Check
	for _, c := range a.healthChecks() {
		if c.Check == nil {
			continue
		}
		checks = append(checks, watchdog.Check{Name: c.Name, Check: func() error { return c.Check(nil) }})
	}
	return checks
}

// newAPIServer builds the kubelet API's server over the agent.
func (a *Agent) newAPIServer() (*server.Server, error) {
	o := a.opts.HTTP.API
	tlsOpts := o.TLS
	if tlsOpts.CertFile == "" && tlsOpts.CertDir == "" && tlsOpts.GetCertificate == nil {
		tlsOpts.CertDir = filepath.Join(a.opts.RootDir, "pki")
	}
	if tlsOpts.Host == "" {
		tlsOpts.Host = a.opts.NodeName
	}
	if tlsOpts.Clock == nil {
		tlsOpts.Clock = a.clock
	}
	if tlsOpts.Logger == nil {
		tlsOpts.Logger = a.log.With("component", "kubelet-api")
	}
	if len(tlsOpts.IPs) == 0 {
		for _, s := range a.opts.Node.HostIPs {
			if ip := net.ParseIP(s); ip != nil {
				tlsOpts.IPs = append(tlsOpts.IPs, ip)
			}
		}
	}
	tlsConfig, clientCAs, err := server.TLSConfig(tlsOpts)
	if err != nil {
		return nil, fmt.Errorf("agent: kubelet API: %w", err)
	}
	var authn server.Authenticator = nobody
	if clientCAs != nil || o.Authenticator != nil || o.Anonymous {
		ao := server.AuthenticatorOptions{Request: o.Authenticator, Anonymous: o.Anonymous}
		if clientCAs != nil {
			// The file is followed (ReloadKubeletClientCAFile): a new CA is
			// accepted, a removed one refused, without a restart.
			ao.ClientCA = clientCAs
		}
		if authn, err = server.NewAuthenticator(ao); err != nil {
			return nil, fmt.Errorf("agent: kubelet API: %w", err)
		}
	} else {
		// As upstream kubelet with no client CA, no token webhook and no
		// anonymous requests: it serves, and answers everyone 401.
		a.log.Warn("The kubelet API authenticates nobody: give it a client CA, a token authenticator or anonymous requests")
	}
	authz := o.Authorizer
	if authz == nil {
		authz = server.AlwaysAllow{}
	}
	if anonymousMayExec(o) {
		a.log.Warn("The kubelet API lets anyone without credentials exec, attach and port-forward into every container " +
			"(anonymous requests with an authorizer that allows everything): give it an authorizer (--authorization-mode=Webhook) or turn anonymous requests off")
	}
	return server.New(server.Options{
		Pods: a, Node: a, Checks: a.healthChecks(), Metrics: a.opts.HTTP.MetricsHandler, ResourceMetrics: a.opts.HTTP.ResourceMetricsHandler,
		ProbeMetrics: a.opts.HTTP.ProbeMetricsHandler, CadvisorMetrics: a.opts.HTTP.CadvisorMetricsHandler,
		Stats: a.api, PodGetter: a.api, Logs: a.api, Streaming: a.api, Runner: a.api, Checkpoints: a.api, RunningPods: a.api, Configz: o.Configz, WebSockets: o.WebSockets,
		ZPages:   &server.ZPages{StartTime: a.started, Clock: a.clock, BinaryVersion: o.BinaryVersion, EmulationVersion: o.EmulationVersion, Flags: o.Flags},
		NodeLogs: &server.NodeLogs{Dir: o.NodeLogDir, Query: o.NodeLogQuery, Journal: o.Journal},
		Auth:     &server.Auth{Authenticator: authn, Authorizer: authz, NodeName: a.opts.NodeName},
		TLS:      tlsConfig, Logger: a.log.With("component", "kubelet-api"),
	}), nil
}

// anonymousMayExec reports whether requests without credentials may exec,
// attach and port-forward: anonymous requests are let in, and the
// authorizer allows every request.
func anonymousMayExec(o *APIOptions) bool {
	if !o.Anonymous {
		return false
	}
	switch o.Authorizer.(type) {
	case nil, server.AlwaysAllow, *server.AlwaysAllow:
		return true
	}
	return false
}

// nobody finds no user in any request.
var nobody = server.AuthenticatorFunc(func(*http.Request) (*server.User, bool, error) { return nil, false, nil })

// fakeStreaming serves the embedded fake runtime's exec, attach and
// port-forward sessions on a loopback port, for the kubelet API to proxy.
func (a *Agent) fakeStreaming() runnable {
	var srv *fake.StreamingServer
	return runnable{name: "fake-streaming",
		start: func(context.Context) error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("agent: fake runtime streaming: %w", err)
			}
			if srv, err = fake.NewStreamingServer(a.fakeRT, fake.StreamingOptions{Listener: l}); err != nil {
				l.Close()
				return fmt.Errorf("agent: fake runtime streaming: %w", err)
			}
			return nil
		},
		run: func(ctx context.Context) error { return srv.Run(ctx) }}
}
