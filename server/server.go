package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

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
type HealthChecker interface {
	Healthy() error
}

// Options configure a Server. Package agent's *Agent is all three of Pods,
// Node and Health.
type Options struct {
	// Pods answers /pods; nil makes it answer 503.
	Pods PodLister
	// Node answers /node; nil makes it answer 503.
	Node NodeStatusGetter
	// Health answers /healthz; nil makes it answer 503.
	Health HealthChecker
	// Metrics serves /metrics; nil means no such endpoint.
	Metrics http.Handler
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context ends. Zero means 5s.
	ShutdownTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server serves the node's HTTP API.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
}

// New builds a Server; it listens on nothing until Serve.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.ShutdownTimeout == 0 {
		s.opts.ShutdownTimeout = 5 * time.Second
	}
	s.mux.HandleFunc("GET /healthz", s.serveHealthz)
	s.mux.HandleFunc("GET /pods", s.servePods)
	s.mux.HandleFunc("GET /node", s.serveNode)
	if opts.Metrics != nil {
		s.mux.Handle("GET /metrics", opts.Metrics)
	}
	return s
}

// Handler returns the server's handler, to mount in a server of your own.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves on l until ctx ends, then shuts down gracefully and closes
// l. It returns nil after a shutdown ctx asked for, or the error that
// stopped it.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.opts.Health == nil {
		http.Error(w, "no health checker", http.StatusServiceUnavailable)
		return
	}
	if err := s.opts.Health.Healthy(); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) servePods(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Pods == nil {
		http.Error(w, "no pod lister", http.StatusServiceUnavailable)
		return
	}
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: s.opts.Pods.PodStatuses()}
	s.writeJSON(w, "/pods", &list)
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
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		s.log.Warn("Failed to write a response", "path", path, "err", err)
	}
}
