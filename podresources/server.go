package podresources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
	alpha "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	"k8s.io/utils/clock"
)

const (
	// DirName is the socket's directory under the kubelet's root
	// directory, upstream's: /var/lib/kubelet/pod-resources.
	DirName = "pod-resources"
	// SocketName is the socket's name in its directory, upstream's.
	SocketName = "kubelet.sock"
	// maxSocketPath is the longest path of a unix socket on Linux.
	maxSocketPath = 107
)

// ErrInvalidOptions is wrapped by New's errors.
var ErrInvalidOptions = errors.New("podresources: invalid options")

// Options configure a Server.
type Options struct {
	// Dir is the socket's directory, made with mode 0750 when missing
	// (upstream's is RootDir/pod-resources: DirName). Required by Listen
	// and Run; the Service alone needs none.
	Dir string
	// Pods are the pods reported on; required.
	Pods Pods
	// Sources are the pods' resources; a nil field means none of that kind.
	Sources Sources
	// ListAllPods makes the v1 List answer every pod (Pods.Pods), as
	// upstream's with KubeletPodResourcesListUseActivePods off; by default
	// it answers the active pods (Pods.ActivePods), the gate on.
	ListAllPods bool
	// QPS and Burst rate-limit every call, all clients together: a call
	// over the limit gets ErrRateLimited. Zero means DefaultQPS and
	// DefaultBurst, upstream's.
	QPS   float64
	Burst int
	// Clock refills the rate limit (nil: the real clock).
	Clock clock.PassiveClock
	// Logger receives the server's logs (nil: discard).
	Logger *slog.Logger
	// Metrics counts the calls answered on the socket (nil: none).
	Metrics Metrics
}

// Service answers the v1 API in process: the Server serves it over the
// socket, and a test (or an agent's user) can call it directly. Its
// methods are safe for concurrent use and are not rate-limited.
type Service struct {
	api.UnsafePodResourcesListerServer
	pods    Pods
	sources Sources
	all     bool // Options.ListAllPods
}

var _ api.PodResourcesListerServer = (*Service)(nil)

// List answers the active pods (upstream's KubeletPodResourcesListUseActivePods,
// on), or every pod with Options.ListAllPods, sorted by namespace and name.
func (s *Service) List(context.Context, *api.ListPodResourcesRequest) (*api.ListPodResourcesResponse, error) {
	var pods []*v1.Pod
	if s.all {
		pods = slices.Clone(s.pods.Pods())
	} else {
		pods = slices.Clone(s.pods.ActivePods())
	}
	SortPods(pods)
	out := &api.ListPodResourcesResponse{PodResources: make([]*api.PodResources, 0, len(pods))}
	for _, p := range pods {
		out.PodResources = append(out.PodResources, PodResources(p, s.sources))
	}
	return out, nil
}

// Get answers one active pod; one that is not active gets NotFound.
func (s *Service) Get(_ context.Context, req *api.GetPodResourcesRequest) (*api.GetPodResourcesResponse, error) {
	p, ok := FindPod(s.pods.ActivePods(), req.GetPodNamespace(), req.GetPodName())
	if !ok {
		return nil, NotFound(req.GetPodNamespace(), req.GetPodName())
	}
	return &api.GetPodResourcesResponse{PodResources: PodResources(p, s.sources)}, nil
}

// GetAllocatableResources answers Allocatable.
func (s *Service) GetAllocatableResources(context.Context, *api.AllocatableResourcesRequest) (*api.AllocatableResourcesResponse, error) {
	return Allocatable(s.sources), nil
}

// alphaService answers v1alpha1's List: every pod the node holds, active
// or not, as upstream still serves it.
type alphaService struct {
	alpha.UnsafePodResourcesListerServer
	pods    Pods
	devices Devices
}

func (s alphaService) List(context.Context, *alpha.ListPodResourcesRequest) (*alpha.ListPodResourcesResponse, error) {
	pods := slices.Clone(s.pods.Pods())
	SortPods(pods)
	out := &alpha.ListPodResourcesResponse{PodResources: make([]*alpha.PodResources, 0, len(pods))}
	for _, p := range pods {
		out.PodResources = append(out.PodResources, AlphaPodResources(p, s.devices))
	}
	return out, nil
}

// Server serves the pod-resources API, v1 and v1alpha1, on a unix socket.
type Server struct {
	o       Options
	log     *slog.Logger
	service *Service

	mu       sync.Mutex
	listener net.Listener
	ran      bool
}

// New returns a Server; it touches no disk and starts nothing.
func New(opts Options) (*Server, error) {
	if opts.Pods == nil {
		return nil, fmt.Errorf("podresources: Options.Pods is required: %w", ErrInvalidOptions)
	}
	if opts.QPS < 0 || opts.Burst < 0 {
		return nil, fmt.Errorf("podresources: QPS %v and Burst %d must not be negative: %w", opts.QPS, opts.Burst, ErrInvalidOptions)
	}
	if opts.QPS == 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Dir != "" {
		dir, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("podresources: %w", err)
		}
		opts.Dir = dir
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{o: opts, log: log, service: &Service{pods: opts.Pods, sources: opts.Sources, all: opts.ListAllPods}}, nil
}

// Service returns the v1 API the server serves, to call in process.
func (s *Server) Service() *Service { return s.service }

// SocketPath is where the server listens: Dir/kubelet.sock.
func (s *Server) SocketPath() string { return filepath.Join(s.o.Dir, SocketName) }

// Listen makes Dir (0750) and listens on SocketPath, as upstream does: a
// stale socket is removed first, and the new one is bound under a
// temporary name and renamed into place, so that a client never dials a
// half-made socket. The socket's mode is what the process's umask gives.
// Run calls it when it has not been called.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return nil
	}
	if s.o.Dir == "" {
		return fmt.Errorf("podresources: Options.Dir is required to listen: %w", ErrInvalidOptions)
	}
	path := s.SocketPath()
	if len(path) > maxSocketPath {
		return fmt.Errorf("podresources: socket path %s is longer than the %d bytes a unix socket's path may have", path, maxSocketPath)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("podresources: remove stale socket: %w", err)
	}
	if err := os.MkdirAll(s.o.Dir, 0o750); err != nil {
		return fmt.Errorf("podresources: %w", err)
	}
	tmp, err := os.CreateTemp(s.o.Dir, ".kubelet.sock-")
	if err != nil {
		return fmt.Errorf("podresources: %w", err)
	}
	tmp.Close()
	if err := os.Remove(tmp.Name()); err != nil {
		return fmt.Errorf("podresources: %w", err)
	}
	l, err := net.Listen("unix", tmp.Name())
	if err != nil {
		return fmt.Errorf("podresources: %w", err)
	}
	// The listener's own name is gone after the rename; Run removes the
	// socket at its real path when it stops.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Rename(tmp.Name(), path); err != nil {
		l.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("podresources: %w", err)
	}
	s.listener = l
	return nil
}

// Run listens (when Listen has not been called) and serves until ctx
// ends; then it stops the server, waits for the calls under way, removes
// the socket and returns. It may be called once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("podresources: Run called twice")
	}
	s.ran = true
	s.mu.Unlock()
	if err := s.Listen(); err != nil {
		return err
	}
	limiter := NewLimiter(s.o.Clock, s.o.QPS, s.o.Burst)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !limiter.Allow() {
			return nil, ErrRateLimited
		}
		resp, err := h(ctx, req)
		if s.o.Metrics != nil {
			if version, method, ok := callOf(info.FullMethod); ok {
				s.o.Metrics.Request(version, method, err != nil)
			}
		}
		return resp, err
	}))
	api.RegisterPodResourcesListerServer(srv, s.service)
	alpha.RegisterPodResourcesListerServer(srv, alphaService{pods: s.o.Pods, devices: s.o.Sources.Devices})
	s.log.Info("Setting rate limiting for endpoint", "service", "podresources", "qps", s.o.QPS, "burstTokens", s.o.Burst)
	s.log.Info("Starting to serve the podresources API", "endpoint", "unix://"+s.SocketPath())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.listener) }()
	var err error
	select {
	case <-ctx.Done():
		srv.GracefulStop()
		<-done
	case err = <-done:
		err = fmt.Errorf("podresources: serve: %w", err)
	}
	if rmErr := os.Remove(s.SocketPath()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		s.log.Warn("Failed to remove the pod-resources socket", "path", s.SocketPath(), "err", rmErr)
	}
	return err
}
