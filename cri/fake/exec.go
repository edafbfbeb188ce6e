package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ExecSync implements cri.Execer, in a running container only (a missing
// container is ErrNotFound, one that is not running ErrFailedPrecondition).
// The command is the first matching ExecRule, or else a built-in command
// (see the package doc), with no stdin. A rule whose Duration exceeds
// timeout (when not 0) fails the call with an error wrapping cri.ErrTimeout
// once timeout has passed on the runtime's clock; a ctx that ends first
// fails the call with its error.
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
	p := r.newProcLocked(c)
	r.mu.Unlock()

	var stdout, stderr bytes.Buffer
	p.out, p.err = &stdout, &stderr
	p.budget = timeout
	code := p.run(ctx, cmd)
	switch {
	case errors.Is(p.abort, errExecTimeout):
		return nil, fmt.Errorf("exec %q in container %q: command did not finish within %s: %w", strings.Join(cmd, " "), c.id, timeout, cri.ErrTimeout)
	case p.abort != nil:
		return nil, fmt.Errorf("exec %q in container %q: %w", strings.Join(cmd, " "), c.id, p.abort)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}, nil
}

// errNoStreaming says why the streaming calls fail without a streaming
// server.
var errNoStreaming = errors.New("the fake runtime has no streaming server")

// Exec implements cri.Streamer: it returns the URL of an exec session on the
// runtime's StreamingServer, as containerd returns one on its own. The
// container must exist (ErrNotFound) and run (ErrFailedPrecondition); the
// request must ask for stdin, stdout or stderr, and not for both a tty and
// stderr (ErrInvalidArgument). Without a StreamingServer serving, it fails
// with an error wrapping cri.ErrUnimplemented.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.enter(ctx, Exec, req); err != nil {
		return nil, err
	}
	srv, id, err := r.streamTarget(Exec, req.GetContainerId())
	if err != nil {
		return nil, err
	}
	req = proto.CloneOf(req)
	req.ContainerId = id
	resp, err := srv.lib.GetExec(req)
	if err != nil {
		return nil, fmt.Errorf("exec in container %q: %w", id, streamingError(err))
	}
	return resp, nil
}

// Attach implements cri.Streamer: it returns the URL of an attach session on
// the runtime's StreamingServer, with the errors of Exec.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.enter(ctx, Attach, req); err != nil {
		return nil, err
	}
	srv, id, err := r.streamTarget(Attach, req.GetContainerId())
	if err != nil {
		return nil, err
	}
	req = proto.CloneOf(req)
	req.ContainerId = id
	resp, err := srv.lib.GetAttach(req)
	if err != nil {
		return nil, fmt.Errorf("attach to container %q: %w", id, streamingError(err))
	}
	return resp, nil
}

// PortForward implements cri.Streamer: it returns the URL of a port-forward
// session into the sandbox on the runtime's StreamingServer. The sandbox
// must exist (ErrNotFound) and be ready (ErrFailedPrecondition). What
// answers on each port is scripted with PortRules.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.enter(ctx, PortForward, req); err != nil {
		return nil, err
	}
	r.mu.Lock()
	srv := r.streamer
	if srv == nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("%s: %w: %w", PortForward, errNoStreaming, cri.ErrUnimplemented)
	}
	s, err := r.sandboxes.resolve(req.GetPodSandboxId(), "pod sandbox")
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("failed to find sandbox: %w", err)
	}
	ready := s.state == runtimeapi.PodSandboxState_SANDBOX_READY
	r.mu.Unlock()
	if !ready {
		return nil, fmt.Errorf("port forward into sandbox %q: sandbox container is not running: %w", s.id, cri.ErrFailedPrecondition)
	}
	req = proto.CloneOf(req)
	req.PodSandboxId = s.id
	resp, err := srv.lib.GetPortForward(req)
	if err != nil {
		return nil, fmt.Errorf("port forward into sandbox %q: %w", s.id, streamingError(err))
	}
	return resp, nil
}

// streamTarget returns the streaming server and the ID of the running
// container an Exec or Attach names, with containerd's errors.
func (r *Runtime) streamTarget(m Method, containerID string) (*StreamingServer, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.streamer == nil {
		return nil, "", fmt.Errorf("%s: %w: %w", m, errNoStreaming, cri.ErrUnimplemented)
	}
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return nil, "", fmt.Errorf("failed to find container in store: %w", err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, "", fmt.Errorf("container %q is in %s state: %w", c.id, c.state, cri.ErrFailedPrecondition)
	}
	return r.streamer, c.id, nil
}

// streamingError turns an error of the streaming library (a gRPC status)
// into one wrapping the matching cri sentinel.
func streamingError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return fmt.Errorf("%s: %w", st.Message(), cri.ErrInvalidArgument)
	case codes.ResourceExhausted:
		return fmt.Errorf("%s: %w", st.Message(), cri.ErrUnavailable)
	}
	return err
}

// errorText is an error's message as strerror prints it: without Go's
// "op path: " prefix, capitalized.
func errorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}
