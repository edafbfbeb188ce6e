package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Client is a CRI v1 client connected to one runtime endpoint. It implements
// RuntimeService and ImageService. It is safe for concurrent use; Close
// releases the connection.
type Client struct {
	conn        *grpc.ClientConn
	endpoint    string
	runtime     runtimeapi.RuntimeServiceClient
	images      runtimeapi.ImageServiceClient
	timeout     time.Duration
	pullTimeout time.Duration
	log         *slog.Logger
	version     *runtimeapi.VersionResponse
}

var (
	_ RuntimeService = (*Client)(nil)
	_ ImageService   = (*Client)(nil)
)

// Endpoint returns the endpoint the client was dialed with.
func (c *Client) Endpoint() string { return c.endpoint }

// RuntimeVersion returns the answer to the Version call made by Dial.
func (c *Client) RuntimeVersion() *runtimeapi.VersionResponse { return c.version }

// Close closes the connection. Calls in flight fail with codes.Canceled.
func (c *Client) Close() error { return c.conn.Close() }

// call runs one unary CRI call with the given timeout (0: none beyond ctx) and
// converts its error.
func call[T any](ctx context.Context, c *Client, method string, timeout time.Duration, rpc func(context.Context) (T, error)) (T, error) {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	resp, err := rpc(callCtx)
	if err == nil {
		return resp, nil
	}
	var zero T
	if ctx.Err() == nil && timeout > 0 && ownDeadlinePassed(callCtx) {
		err = &Error{Method: method, Code: codes.DeadlineExceeded, Message: fmt.Sprintf("no answer from the runtime at %s within %s", c.endpoint, timeout)}
		c.log.Warn("CRI call timed out", "method", method, "timeout", timeout)
		return zero, err
	}
	return zero, fromRPC(ctx, method, err)
}

// ownDeadlinePassed reports whether the call's own deadline has passed. The
// context's error is not enough: gRPC can see the deadline (and fail the call
// with the server's RST_STREAM) a moment before the context's timer fires.
func ownDeadlinePassed(callCtx context.Context) bool {
	if callCtx.Err() == context.DeadlineExceeded {
		return true
	}
	d, ok := callCtx.Deadline()
	return ok && !time.Now().Before(d)
}

// Version implements Versioner.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return call(ctx, c, "Version", c.timeout, func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		return c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
	})
}

// RunPodSandbox implements SandboxManager.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	resp, err := call(ctx, c, "RunPodSandbox", c.timeout, func(ctx context.Context) (*runtimeapi.RunPodSandboxResponse, error) {
		return c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	})
	if err != nil {
		return "", err
	}
	if resp.PodSandboxId == "" {
		return "", &Error{Method: "RunPodSandbox", Code: codes.Internal, Message: "runtime returned an empty sandbox ID"}
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox implements SandboxManager.
func (c *Client) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	_, err := call(ctx, c, "StopPodSandbox", c.timeout, func(ctx context.Context) (*runtimeapi.StopPodSandboxResponse, error) {
		return c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podSandboxID})
	})
	return err
}

// RemovePodSandbox implements SandboxManager.
func (c *Client) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	_, err := call(ctx, c, "RemovePodSandbox", c.timeout, func(ctx context.Context) (*runtimeapi.RemovePodSandboxResponse, error) {
		return c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podSandboxID})
	})
	return err
}

// PodSandboxStatus implements SandboxManager.
func (c *Client) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	resp, err := call(ctx, c, "PodSandboxStatus", c.timeout, func(ctx context.Context) (*runtimeapi.PodSandboxStatusResponse, error) {
		return c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podSandboxID, Verbose: verbose})
	})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, &Error{Method: "PodSandboxStatus", Code: codes.Internal, Message: fmt.Sprintf("runtime returned no status for sandbox %q", podSandboxID)}
	}
	return resp, nil
}

// ListPodSandbox implements SandboxManager.
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := call(ctx, c, "ListPodSandbox", c.timeout, func(ctx context.Context) (*runtimeapi.ListPodSandboxResponse, error) {
		return c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return resp.Items, nil
}

// CreateContainer implements ContainerManager.
func (c *Client) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := call(ctx, c, "CreateContainer", c.timeout, func(ctx context.Context) (*runtimeapi.CreateContainerResponse, error) {
		return c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podSandboxID, Config: config, SandboxConfig: sandboxConfig})
	})
	if err != nil {
		return "", err
	}
	if resp.ContainerId == "" {
		return "", &Error{Method: "CreateContainer", Code: codes.Internal, Message: "runtime returned an empty container ID"}
	}
	return resp.ContainerId, nil
}

// StartContainer implements ContainerManager.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	_, err := call(ctx, c, "StartContainer", c.timeout, func(ctx context.Context) (*runtimeapi.StartContainerResponse, error) {
		return c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID})
	})
	return err
}

// StopContainer implements ContainerManager. The call may take the stop
// timeout on top of the runtime request timeout, as upstream allows.
func (c *Client) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	callTimeout := c.timeout
	if callTimeout > 0 {
		callTimeout += time.Duration(timeout) * time.Second
	}
	_, err := call(ctx, c, "StopContainer", callTimeout, func(ctx context.Context) (*runtimeapi.StopContainerResponse, error) {
		return c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: timeout})
	})
	return err
}

// RemoveContainer implements ContainerManager.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	_, err := call(ctx, c, "RemoveContainer", c.timeout, func(ctx context.Context) (*runtimeapi.RemoveContainerResponse, error) {
		return c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: containerID})
	})
	return err
}

// ListContainers implements ContainerManager.
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := call(ctx, c, "ListContainers", c.timeout, func(ctx context.Context) (*runtimeapi.ListContainersResponse, error) {
		return c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

// ContainerStatus implements ContainerManager.
func (c *Client) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := call(ctx, c, "ContainerStatus", c.timeout, func(ctx context.Context) (*runtimeapi.ContainerStatusResponse, error) {
		return c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose})
	})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, &Error{Method: "ContainerStatus", Code: codes.Internal, Message: fmt.Sprintf("runtime returned no status for container %q", containerID)}
	}
	return resp, nil
}

// UpdateContainerResources implements ContainerManager.
func (c *Client) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	_, err := call(ctx, c, "UpdateContainerResources", c.timeout, func(ctx context.Context) (*runtimeapi.UpdateContainerResourcesResponse, error) {
		req := &runtimeapi.UpdateContainerResourcesRequest{ContainerId: containerID}
		if resources != nil {
			req.Linux, req.Windows = resources.Linux, resources.Windows
		}
		return c.runtime.UpdateContainerResources(ctx, req)
	})
	return err
}

// ReopenContainerLog implements ContainerManager.
func (c *Client) ReopenContainerLog(ctx context.Context, containerID string) error {
	_, err := call(ctx, c, "ReopenContainerLog", c.timeout, func(ctx context.Context) (*runtimeapi.ReopenContainerLogResponse, error) {
		return c.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID})
	})
	return err
}

// CheckpointContainer implements Checkpointer. The call is bounded by
// req.Timeout seconds when above zero, else by the client's request
// timeout, as upstream's remote runtime bounds it.
func (c *Client) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	timeout := c.timeout
	if req.GetTimeout() > 0 {
		timeout = time.Duration(req.GetTimeout()) * time.Second
	}
	_, err := call(ctx, c, "CheckpointContainer", timeout, func(ctx context.Context) (*runtimeapi.CheckpointContainerResponse, error) {
		return c.runtime.CheckpointContainer(ctx, req)
	})
	return err
}

var _ Checkpointer = (*Client)(nil)

// UpdatePodSandboxResources implements SandboxResourcesUpdater.
func (c *Client) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) error {
	_, err := call(ctx, c, "UpdatePodSandboxResources", c.timeout, func(ctx context.Context) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
		return c.runtime.UpdatePodSandboxResources(ctx, req)
	})
	return err
}

var _ SandboxResourcesUpdater = (*Client)(nil)

// ExecSync implements Execer. A timeout above zero is sent to the runtime
// (rounded up to whole seconds, as CRI carries seconds) and bounds the call
// at timeout plus the runtime request timeout; 0 leaves the call unbounded
// but for ctx, as upstream does.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	var callTimeout time.Duration
	var seconds int64
	if timeout > 0 {
		seconds = int64(math.Ceil(timeout.Seconds()))
		callTimeout = timeout + c.timeout
	}
	return call(ctx, c, "ExecSync", callTimeout, func(ctx context.Context) (*runtimeapi.ExecSyncResponse, error) {
		return c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: seconds})
	})
}

// Exec implements Streamer.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return call(ctx, c, "Exec", c.timeout, func(ctx context.Context) (*runtimeapi.ExecResponse, error) {
		return c.runtime.Exec(ctx, req)
	})
}

// Attach implements Streamer.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return call(ctx, c, "Attach", c.timeout, func(ctx context.Context) (*runtimeapi.AttachResponse, error) {
		return c.runtime.Attach(ctx, req)
	})
}

// PortForward implements Streamer.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return call(ctx, c, "PortForward", c.timeout, func(ctx context.Context) (*runtimeapi.PortForwardResponse, error) {
		return c.runtime.PortForward(ctx, req)
	})
}

// ContainerStats implements StatsProvider.
func (c *Client) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	resp, err := call(ctx, c, "ContainerStats", c.timeout, func(ctx context.Context) (*runtimeapi.ContainerStatsResponse, error) {
		return c.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: containerID})
	})
	if err != nil {
		return nil, err
	}
	return resp.Stats, nil
}

// ListContainerStats implements StatsProvider.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := call(ctx, c, "ListContainerStats", c.timeout, func(ctx context.Context) (*runtimeapi.ListContainerStatsResponse, error) {
		return c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return resp.Stats, nil
}

// PodSandboxStats implements StatsProvider.
func (c *Client) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	resp, err := call(ctx, c, "PodSandboxStats", c.timeout, func(ctx context.Context) (*runtimeapi.PodSandboxStatsResponse, error) {
		return c.runtime.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podSandboxID})
	})
	if err != nil {
		return nil, err
	}
	return resp.Stats, nil
}

// ListPodSandboxStats implements StatsProvider.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	resp, err := call(ctx, c, "ListPodSandboxStats", c.timeout, func(ctx context.Context) (*runtimeapi.ListPodSandboxStatsResponse, error) {
		return c.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return resp.Stats, nil
}

// GetContainerEvents implements EventSource. The stream has no timeout; it
// ends with ctx. A stream the runtime closes is reported as an error wrapping
// io.EOF, so that a follower knows to reconnect.
func (c *Client) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		for err == nil {
			var ev *runtimeapi.ContainerEventResponse
			if ev, err = stream.Recv(); err == nil && !yield(ev, nil) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("cri GetContainerEvents: the runtime closed the stream: %w", err)
		} else {
			err = fromRPC(ctx, "GetContainerEvents", err)
		}
		yield(nil, err)
	}
}

// Status implements StatusReporter.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := call(ctx, c, "Status", c.timeout, func(ctx context.Context) (*runtimeapi.StatusResponse, error) {
		return c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, &Error{Method: "Status", Code: codes.Internal, Message: "runtime returned no status"}
	}
	return resp, nil
}

// UpdateRuntimeConfig implements StatusReporter.
func (c *Client) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	_, err := call(ctx, c, "UpdateRuntimeConfig", c.timeout, func(ctx context.Context) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
		return c.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: config})
	})
	return err
}

// RuntimeConfig implements StatusReporter.
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return call(ctx, c, "RuntimeConfig", c.timeout, func(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
		return c.runtime.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	})
}

// ListImages implements ImageManager.
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := call(ctx, c, "ListImages", c.timeout, func(ctx context.Context) (*runtimeapi.ListImagesResponse, error) {
		return c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return resp.Images, nil
}

// ImageStatus implements ImageManager.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return call(ctx, c, "ImageStatus", c.timeout, func(ctx context.Context) (*runtimeapi.ImageStatusResponse, error) {
		return c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	})
}

// PullImage implements ImageManager. It is bounded by the image pull timeout
// of DialOptions, not by the runtime request timeout.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := call(ctx, c, "PullImage", c.pullTimeout, func(ctx context.Context) (*runtimeapi.PullImageResponse, error) {
		return c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	})
	if err != nil {
		return "", err
	}
	if resp.ImageRef == "" {
		return "", &Error{Method: "PullImage", Code: codes.Internal, Message: fmt.Sprintf("runtime returned an empty reference for image %q", image.GetImage())}
	}
	return resp.ImageRef, nil
}

// RemoveImage implements ImageManager.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := call(ctx, c, "RemoveImage", c.timeout, func(ctx context.Context) (*runtimeapi.RemoveImageResponse, error) {
		return c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	})
	return err
}

// ImageFsInfo implements ImageFSInfoer.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return call(ctx, c, "ImageFsInfo", c.timeout, func(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
		return c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	})
}
