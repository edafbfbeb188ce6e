package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults of DialOptions, as upstream kubelet's.
const (
	// DefaultTimeout bounds each CRI call (kubelet's --runtime-request-timeout).
	DefaultTimeout = 2 * time.Minute
	// DefaultConnectTimeout bounds the Version call that Dial makes.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxMessageSize is the largest message the client receives or
	// sends, as upstream's 16 MiB.
	DefaultMaxMessageSize = 16 << 20
	// APIVersion is the CRI version this package speaks.
	APIVersion = "v1"
)

// ErrNotCRI is wrapped by Dial's error when something answers at the endpoint
// but is not a CRI v1 runtime.
var ErrNotCRI = errors.New("not a CRI v1 runtime")

// DialOptions configures Dial. The zero value is usable.
type DialOptions struct {
	// Timeout bounds each call. 0 means DefaultTimeout; a negative value
	// means no timeout beyond the caller's ctx.
	Timeout time.Duration
	// ImagePullTimeout bounds PullImage, which may take much longer than
	// other calls. 0 means none beyond the caller's ctx, as upstream.
	ImagePullTimeout time.Duration
	// ConnectTimeout bounds the Version call Dial makes to check the
	// runtime. 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxMessageSize is the largest message sent or received. 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives warnings such as timed-out calls. nil discards.
	Logger *slog.Logger
}

// Dial connects to the CRI runtime at endpoint ("unix:///path" or an absolute
// path) and checks that it serves CRI v1 by calling Version. Its errors say
// what a person needs to fix:
//   - no socket at the path (wraps fs.ErrNotExist): the runtime is not running
//     or the path is wrong;
//   - the path is not a socket;
//   - nothing accepts connections on the socket (wraps ErrUnavailable);
//   - something answers but is not a CRI v1 runtime (wraps ErrNotCRI);
//   - the runtime did not answer in time (wraps ErrTimeout).
//
// The returned client implements RuntimeService and ImageService; Close it
// when done.
func Dial(ctx context.Context, endpoint string, opts DialOptions) (*Client, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, fmt.Errorf("dial CRI runtime: %w", err)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("dial CRI runtime: no socket at %s (is the runtime running, and is this its endpoint?): %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("dial CRI runtime at %s: %w", path, err)
	case info.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("dial CRI runtime: %s is not a unix socket (it is a %s)", path, describeMode(info.Mode()))
	}

	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Timeout < 0 {
		opts.Timeout = 0
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.ImagePullTimeout < 0 {
		opts.ImagePullTimeout = 0
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	var dialer net.Dialer
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(opts.MaxMessageSize),
			grpc.MaxCallSendMsgSize(opts.MaxMessageSize),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("dial CRI runtime at %s: %w", path, err)
	}
	c := &Client{
		conn:        conn,
		endpoint:    endpoint,
		runtime:     runtimeapi.NewRuntimeServiceClient(conn),
		images:      runtimeapi.NewImageServiceClient(conn),
		timeout:     opts.Timeout,
		pullTimeout: opts.ImagePullTimeout,
		log:         logger.With("endpoint", endpoint),
	}
	version, err := call(ctx, c, "Version", opts.ConnectTimeout, func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		return c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: APIVersion})
	})
	if err == nil && version.RuntimeApiVersion != APIVersion {
		err = fmt.Errorf("%w: it reports API version %q", ErrNotCRI, version.RuntimeApiVersion)
	}
	if err != nil {
		_ = conn.Close()
		return nil, explainDialError(path, err)
	}
	c.version = version
	c.log.Debug("connected to CRI runtime", "runtime", version.RuntimeName, "version", version.RuntimeVersion)
	return c, nil
}

// explainDialError turns the error of Dial's Version call into one a person
// can act on.
func explainDialError(path string, err error) error {
	switch {
	case errors.Is(err, ErrNotCRI):
		return fmt.Errorf("dial CRI runtime at %s: %w", path, err)
	case errors.Is(err, ErrUnimplemented):
		return fmt.Errorf("dial CRI runtime at %s: %w: runtime.v1.RuntimeService/Version is not served there (%v)", path, ErrNotCRI, err)
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("dial CRI runtime: nothing accepts connections on %s, or it does not speak gRPC (is the runtime running?): %w", path, err)
	case errors.Is(err, ErrTimeout):
		return fmt.Errorf("dial CRI runtime: %s did not answer Version in time: %w", path, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("dial CRI runtime at %s: %w", path, err)
	}
	return fmt.Errorf("dial CRI runtime at %s: %w: %w", path, ErrNotCRI, err)
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return m.Type().String()
}
