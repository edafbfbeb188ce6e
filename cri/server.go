package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultShutdownTimeout is how long Serve waits for calls in flight to finish
// after its ctx ends before it closes their connections.
const DefaultShutdownTimeout = 5 * time.Second

// ServerOptions configures NewServer. The zero value is usable.
type ServerOptions struct {
	// ShutdownTimeout bounds the graceful stop when ctx ends. 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// MaxMessageSize is the largest message received or sent. 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives one debug line per failed call. nil discards.
	Logger *slog.Logger
}

// Server serves a RuntimeService and an ImageService as CRI v1 over gRPC, so
// that crictl, critest, a kubelet or this package's Client can talk to them.
// Errors the implementations return are sent with the gRPC code of the
// sentinel they wrap (see ToStatus).
type Server struct {
	grpc     *grpc.Server
	opts     ServerOptions
	log      *slog.Logger
	stopping chan struct{} // closed when a shutdown begins: ends event streams
	stopOnce sync.Once
}

// NewServer returns a server for the given runtime and image services; they may
// be the same value (e.g. a *fake.Runtime). It starts nothing: call Serve or
// ListenAndServe.
func NewServer(runtime RuntimeService, images ImageService, opts ServerOptions) (*Server, error) {
	if runtime == nil {
		return nil, errors.New("cri server: nil RuntimeService")
	}
	if images == nil {
		return nil, errors.New("cri server: nil ImageService")
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: logger, stopping: make(chan struct{})}
	s.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(opts.MaxMessageSize),
		grpc.MaxSendMsgSize(opts.MaxMessageSize),
		grpc.ChainUnaryInterceptor(s.unaryErrors),
		grpc.ChainStreamInterceptor(s.streamErrors),
	)
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, &runtimeServer{rt: runtime, stopping: s.stopping})
	runtimeapi.RegisterImageServiceServer(s.grpc, &imageServer{img: images})
	return s, nil
}

// Serve answers CRI calls on lis until ctx ends, then stops gracefully: event
// streams end, calls in flight get ShutdownTimeout to finish, and Serve returns
// once every goroutine it started has ended. It returns nil after a shutdown
// through ctx, or the listener's error. A Server serves once.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(lis) }()
	select {
	case err := <-errc:
		s.shutdown()
		return fmt.Errorf("cri server: %w", err)
	case <-ctx.Done():
	}
	s.shutdown()
	return <-errc
}

func (s *Server) shutdown() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		t := time.NewTimer(s.opts.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			s.log.Warn("cri server: calls still in flight after the shutdown timeout; closing them", "timeout", s.opts.ShutdownTimeout)
			s.grpc.Stop()
			<-done
		}
	})
}

// ListenAndServe listens on the unix socket of endpoint ("unix:///path" or an
// absolute path) and serves on it until ctx ends, then removes the socket. A
// stale socket left at the path is replaced; any other file there is an error.
// The socket's parent directory is created (mode 0755) and the socket gets
// mode 0660.
func (s *Server) ListenAndServe(ctx context.Context, endpoint string) error {
	lis, err := Listen(endpoint)
	if err != nil {
		return err
	}
	return s.Serve(ctx, lis)
}

// Listen creates the unix socket of a CRI endpoint for Serve: it creates the
// parent directory, replaces a stale socket (but refuses to replace any other
// kind of file), and sets mode 0660. Closing the listener removes the socket.
func Listen(endpoint string) (net.Listener, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, fmt.Errorf("cri server: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("cri server: %w", err)
	}
	if info, err := os.Lstat(path); err == nil {
		if info.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("cri server: %s exists and is not a socket (it is a %s); refusing to replace it", path, describeMode(info.Mode()))
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("cri server: remove stale socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("cri server: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("cri server: %w", err)
	}
	return lis, nil
}

func (s *Server) unaryErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		st := ToStatus(err)
		s.log.Debug("CRI call failed", "method", info.FullMethod, "code", st.Code(), "error", err)
		return nil, st.Err()
	}
	return resp, nil
}

func (s *Server) streamErrors(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if err != nil {
		st := ToStatus(err)
		s.log.Debug("CRI stream failed", "method", info.FullMethod, "code", st.Code(), "error", err)
		return st.Err()
	}
	return nil
}
