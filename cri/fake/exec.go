package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ExecSync implements cri.Execer, in a running container only (a missing
// container is ErrNotFound, one that is not running ErrFailedPrecondition).
// The result comes from the first matching ExecRule, or else from the
// built-in defaults (see the package doc). A rule whose Duration exceeds
// timeout (when not 0) fails with an error wrapping cri.ErrTimeout once
// timeout has passed on the runtime's clock; a ctx that ends first fails the
// call with its error.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	secs := int64((timeout + time.Second - 1) / time.Second)
	if err := r.enter(ctx, ExecSync, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: secs}); err != nil {
		return nil, err
	}
	if len(cmd) == 0 {
		return nil, fmt.Errorf("exec in container %q: empty command: %w", containerID, cri.ErrInvalidArgument)
	}
	cmd = slices.Clone(cmd)
	r.mu.Lock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("exec in container: %w", err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return nil, fmt.Errorf("exec in container %q: container is in %s state: %w", c.id, c.state, cri.ErrFailedPrecondition)
	}
	res := r.execResultLocked(c, cmd)
	r.mu.Unlock()

	if d := res.Duration; d > 0 {
		if timeout > 0 && timeout < d {
			d = timeout
		}
		if err := r.wait(ctx, d, nil); err != nil {
			return nil, fmt.Errorf("exec %q in container %q: %w", strings.Join(cmd, " "), c.id, err)
		}
		if d < res.Duration {
			return nil, fmt.Errorf("exec %q in container %q: command did not finish within %s: %w", strings.Join(cmd, " "), c.id, timeout, cri.ErrTimeout)
		}
	}
	return &runtimeapi.ExecSyncResponse{Stdout: []byte(res.Stdout), Stderr: []byte(res.Stderr), ExitCode: res.ExitCode}, nil
}

// errNoStreaming says why the streaming calls fail.
var errNoStreaming = errors.New("the fake runtime has no streaming server")

// Exec implements cri.Streamer. The fake has no streaming server: it fails
// with an error wrapping cri.ErrUnimplemented.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return nil, r.streaming(ctx, Exec, req)
}

// Attach implements cri.Streamer; it fails with an error wrapping
// cri.ErrUnimplemented.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return nil, r.streaming(ctx, Attach, req)
}

// PortForward implements cri.Streamer; it fails with an error wrapping
// cri.ErrUnimplemented.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return nil, r.streaming(ctx, PortForward, req)
}

func (r *Runtime) streaming(ctx context.Context, m Method, req proto.Message) error {
	if err := r.enter(ctx, m, req); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w: %w", m, errNoStreaming, cri.ErrUnimplemented)
}
