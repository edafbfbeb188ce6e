package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodLister gives the node's pods with their current statuses.
type PodLister interface {
	PodStatuses() []v1.Pod
}

// NodeStatusGetter gives the node's name and its status as last built, and
// false before the first.
type NodeStatusGetter interface {
	NodeName() string
	NodeStatus() (v1.NodeStatus, bool)
}

// HealthChecker says whether the node is healthy: nil, or the reasons.
// Given as Options.Health, it is /healthz's check "syncloop".
type HealthChecker interface {
	Healthy() error
}

// Options configure a Server. Package agent's *Agent is Pods, Node and
// Health. A part left nil makes its endpoints answer 503 (or, for the
// metrics handlers, not exist).
type Options struct {
	// Pods answers /pods.
	Pods PodLister
	// Node answers /node, and names the node in authorization
	// attributes unless Auth.NodeName does.
	Node NodeStatusGetter
	// Health is /healthz's check "syncloop", when set.
	Health HealthChecker
	// Checks are /healthz's further checks, after "ping" and "syncloop".
	Checks []HealthCheck
	// Metrics serves /metrics.
	Metrics http.Handler
	// ResourceMetrics serves /metrics/resource (what metrics-server may
	// scrape); the core has no metrics library, and the examples module
	// builds it with client_golang.
	ResourceMetrics http.Handler
	// ProbeMetrics serves /metrics/probes, the probe metrics upstream
	// serves on a path of their own (prober_probe_total,
	// prober_probe_duration_seconds), on both servers and authorized as
	// the other metrics (nodes/metrics); examples/prometheus builds it.
	ProbeMetrics http.Handler
	// CadvisorMetrics serves /metrics/cadvisor, upstream's cAdvisor
	// metrics (container_*, machine_*), on both servers and authorized as
	// the other metrics (nodes/metrics); examples/prometheus builds it
	// from the runtime's CRI stats.
	CadvisorMetrics http.Handler
	// Stats answers /stats/summary.
	Stats StatsProvider

	// The secure server's parts; the read-only server answers their paths
	// 405 "Debug endpoints are disabled.", as upstream's read-only port.

	// PodGetter finds the pod of /containerLogs, /exec, /attach,
	// /portForward and /run.
	PodGetter PodGetter
	// Logs answers /containerLogs.
	Logs ContainerLogger
	// Streaming gives the runtime's URL for /exec, /attach and
	// /portForward.
	Streaming Streamer
	// Runner answers /run.
	Runner CommandRunner
	// Checkpoints answers /checkpoint. Nil: no /checkpoint (404).
	Checkpoints Checkpointer
	// RunningPods answers /runningpods/.
	RunningPods RunningPodLister
	// Configz answers /configz, upstream's view of the kubelet's
	// configuration ({"kubeletconfig": <KubeletConfiguration>}), which the
	// node e2e suite reads through the API server's node proxy. Nil: no
	// /configz (404). The read-only server never serves it, as upstream's
	// read-only port does not.
	Configz ConfigProvider
	// ZPages serves /statusz and, with ZPages.Flags, /flagz (upstream's
	// ComponentStatusz and ComponentFlagz, beta and on in 1.36), on the
	// secure server only, as upstream. Nil: neither (404).
	ZPages *ZPages
	// NodeLogs serves /logs/, the node's log directory and, with
	// NodeLogs.Query, its journal (upstream's enableSystemLogHandler and
	// enableSystemLogQuery), on the secure server only. Nil or an empty
	// Dir: /logs/ answers 405 "logs endpoint is disabled.", as upstream's
	// with the handler off.
	NodeLogs *NodeLogs
	// RedirectContainerStreaming answers /exec, /attach and /portForward
	// with a 302 to the runtime's URL instead of proxying the connection
	// (upstream's former --redirect-container-streaming): the client must
	// then reach the runtime's streaming server itself.
	RedirectContainerStreaming bool
	// WebSockets, when set, serves the exec and attach requests for the
	// v5 WebSocket protocol and the port forwards tunnelled in a WebSocket
	// (what kubectl 1.30 and later send), translating them to the SPDY the
	// runtime speaks, as upstream kubelet does. The API server sends such
	// requests on to a node only when it declares the feature
	// ExtendWebSocketsToKubelet in status.declaredFeatures, and translates
	// them itself otherwise: a node that declares it needs this. Nil:
	// those requests are proxied (or redirected) to the runtime as any
	// other.
	WebSockets WebSocketTranslator

	// Auth, when set, makes this the kubelet's secure server (port
	// 10250): every request authenticated and authorized, and every
	// endpoint served. Nil makes it the read-only server (port 10255):
	// no authentication, and only /healthz, /pods, /node, /stats/summary
	// and the metrics.
	Auth *Auth
	// TLS, when set, makes Serve speak TLS with it (see TLSConfig). Client
	// certificates are verified by Auth's authenticator, not here.
	TLS *tls.Config

	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context ends. Zero means 5s.
	ShutdownTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server serves the node's HTTP API.
type Server struct {
	opts     Options
	log      *slog.Logger
	checks   []HealthCheck
	handler  http.Handler
	zpages   *zpages
	nodeLogs *nodeLogs
}

// New builds a Server; it listens on nothing until Serve.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, checks: healthChecks(opts)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.ShutdownTimeout == 0 {
		s.opts.ShutdownTimeout = 5 * time.Second
	}
	mux := http.NewServeMux()
	s.healthRoutes(mux)
	mux.HandleFunc("GET /pods", s.servePods)
	mux.HandleFunc("GET /node", s.serveNode)
	mux.HandleFunc("GET /stats/summary", s.serveSummary)
	mux.HandleFunc("POST /stats/summary", s.serveSummary)
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	if opts.ResourceMetrics != nil {
		mux.Handle("GET /metrics/resource", opts.ResourceMetrics)
	}
	if opts.ProbeMetrics != nil {
		mux.Handle("GET "+probeMetricsPath, opts.ProbeMetrics)
	}
	if opts.CadvisorMetrics != nil {
		mux.Handle("GET "+cadvisorMetricsPath, opts.CadvisorMetrics)
	}
	if opts.Auth == nil {
		disabled := func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
		}
		for _, p := range []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", runningPodsPath, "/debug/pprof/", logsPath} {
			mux.HandleFunc(p, disabled)
		}
		s.handler = mux
		return s
	}
	mux.HandleFunc("GET "+runningPodsPath+"{$}", s.serveRunningPods)
	if opts.Configz != nil {
		// Every method, as upstream's handler: the verb only changes what
		// is authorized (GET get, POST create of nodes/configz).
		mux.HandleFunc(configzPath, s.serveConfigz)
	}
	s.nodeLogs = &nodeLogs{}
	if opts.NodeLogs != nil {
		s.nodeLogs.o = *opts.NodeLogs
	}
	if s.nodeLogs.o.Dir != "" {
		mux.HandleFunc("GET "+logsPath, s.serveNodeLogs)
	} else {
		mux.HandleFunc(logsPath, s.serveNodeLogs)
	}
	routes := []podRoute{
		{"/containerLogs/", []string{http.MethodGet}, s.serveContainerLogs},
		{"/exec/", []string{http.MethodGet, http.MethodPost}, s.serveExec},
		{"/attach/", []string{http.MethodGet, http.MethodPost}, s.serveAttach},
		{"/portForward/", []string{http.MethodGet, http.MethodPost}, s.servePortForward},
		{"/run/", []string{http.MethodPost}, s.serveRun},
		{checkpointPath, []string{http.MethodPost}, s.serveCheckpoint},
	}
	if opts.ZPages != nil {
		// Every method, as upstream's handlers; installed last, as
		// upstream, so that /statusz lists every other path.
		paths := s.paths(routes)
		if opts.ZPages.Flags != nil {
			mux.HandleFunc(flagzPath, s.serveFlagz)
			paths = append(paths, flagzPath)
		}
		s.zpages = newZPages(*opts.ZPages, paths)
		mux.HandleFunc(statuszPath, s.serveStatusz)
	}
	s.handler = s.withAuth(podRoutes(mux, routes))
	return s
}

// paths are the paths the secure server serves before its zpages, for
// /statusz.
func (s *Server) paths(routes []podRoute) []string {
	paths := []string{healthzPath, podsPath, "/node", statsPath, runningPodsPath, logsPath}
	if s.opts.Metrics != nil || s.opts.ResourceMetrics != nil || s.opts.ProbeMetrics != nil || s.opts.CadvisorMetrics != nil {
		paths = append(paths, metricsPath)
	}
	if s.opts.Configz != nil {
		paths = append(paths, configzPath)
	}
	for _, rt := range routes {
		paths = append(paths, rt.prefix)
	}
	return paths
}

// podRoute is an endpoint whose path names a pod: its prefix, methods and
// handler.
type podRoute struct {
	prefix  string
	methods []string
	serve   http.HandlerFunc
}

// podRoutes serves the per-pod endpoints, and passes other paths to next.
// They are dispatched on the escaped path, before a ServeMux would clean
// it: their handlers parse and validate each segment themselves
// (parsePodPath), so that an empty segment or a dot segment is refused as
// upstream's router would, not redirected elsewhere.
func podRoutes(next http.Handler, routes []podRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.EscapedPath()
		for _, rt := range routes {
			if !strings.HasPrefix(path, rt.prefix) {
				continue
			}
			if !slices.Contains(rt.methods, r.Method) && !(r.Method == http.MethodHead && slices.Contains(rt.methods, http.MethodGet)) {
				w.Header().Set("Allow", strings.Join(rt.methods, ", "))
				http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
				return
			}
			rt.serve(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler returns the server's handler, to mount in a server of your own.
// Proxying /exec, /attach and /portForward needs a ResponseWriter that can
// be hijacked (net/http's HTTP/1.1 one).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on l until ctx ends, then shuts down gracefully and closes
// l; with Options.TLS it speaks TLS. It returns nil after a shutdown ctx
// asked for, or the error that stopped it. Connections taken over by
// /exec, /attach and /portForward are closed when it stops.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	tl := &trackingListener{Listener: l, conns: map[*trackedConn]struct{}{}}
	// The requests' contexts end when the shutdown gives up on them, so
	// that a followed log stops.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           s.handler,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         markHijacked,
		ReadHeaderTimeout: 5 * time.Second,
		// Upstream's: long enough for a day of following logs or an exec
		// session of 4h.
		IdleTimeout:    90 * time.Second,
		ReadTimeout:    4 * time.Hour,
		WriteTimeout:   4 * time.Hour,
		MaxHeaderBytes: 1 << 20,
	}
	done := make(chan error, 1)
	if s.opts.TLS != nil {
		srv.TLSConfig = s.opts.TLS.Clone()
		go func() { done <- srv.ServeTLS(tl, "", "") }()
	} else {
		go func() { done <- srv.Serve(tl) }()
	}
	select {
	case err := <-done:
		tl.closeHijacked()
		return fmt.Errorf("serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	cancelBase()
	// Shutdown neither waits for nor closes the hijacked connections, the
	// proxied streams: their ends are closed here.
	tl.closeHijacked()
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// trackingListener remembers the connections it accepted until they are
// closed, so that Serve can close those the proxy took over.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

func (l *trackingListener) closeHijacked() {
	l.mu.Lock()
	var conns []*trackedConn
	for c := range l.conns {
		if c.hijacked.Load() {
			conns = append(conns, c)
		}
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// markHijacked is the server's ConnState hook: it marks the connections
// a handler takes over.
func markHijacked(c net.Conn, state http.ConnState) {
	if state != http.StateHijacked {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if tc, ok := c.(*trackedConn); ok {
		tc.hijacked.Store(true)
	}
}

type trackedConn struct {
	net.Conn
	l        *trackingListener
	hijacked atomic.Bool
	once     sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (s *Server) servePods(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Pods == nil {
		http.Error(w, "no pod lister", http.StatusServiceUnavailable)
		return
	}
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: s.opts.Pods.PodStatuses()}
	s.writeCompactJSON(w, "/pods", &list)
}

func (s *Server) serveNode(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Node == nil {
		http.Error(w, "no node", http.StatusServiceUnavailable)
		return
	}
	n := v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: s.opts.Node.NodeName()}}
	n.Status, _ = s.opts.Node.NodeStatus()
	s.writeJSON(w, "/node", &n)
}

func (s *Server) writeJSON(w http.ResponseWriter, path string, v any) {
	s.encodeJSON(w, path, v, true)
}

// writeCompactJSON writes v as the API's codec does, on one line: /pods
// and /runningpods/, whose lists of hundreds of pods a caller may poll.
func (s *Server) writeCompactJSON(w http.ResponseWriter, path string, v any) {
	s.encodeJSON(w, path, v, false)
}

func (s *Server) encodeJSON(w http.ResponseWriter, path string, v any, indent bool) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		s.log.Warn("Failed to write a response", "path", path, "err", err)
	}
}

// writeError answers code with msg as it is, as go-restful's
// WriteErrorString does for upstream's handlers.
func writeError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// errorStatus is the HTTP status for an error a node interface returned:
// 404 for ErrNotFound or a gRPC NotFound, 400 for ErrBadRequest or a gRPC
// InvalidArgument, 429 for a gRPC ResourceExhausted (the runtime's
// streaming server has too many requests in flight), else 500.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	}
	if st, ok := grpcstatus.FromError(err); ok {
		switch st.Code() {
		case codes.NotFound:
			return http.StatusNotFound
		case codes.InvalidArgument:
			return http.StatusBadRequest
		case codes.ResourceExhausted:
			return http.StatusTooManyRequests
		}
	}
	return http.StatusInternalServerError
}

// writeNodeError answers an error a node interface returned, with its
// text, under errorStatus.
func writeNodeError(w http.ResponseWriter, err error) {
	code := errorStatus(err)
	if code == http.StatusTooManyRequests {
		// The runtime's request cache lives a minute (upstream's cacheTTL).
		w.Header().Set("Retry-After", "60")
	}
	writeError(w, code, err.Error())
}
