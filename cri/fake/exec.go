package fake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
	res, scripted := r.execRuleLocked(c, cmd)
	mounts := c.config.GetMounts()
	r.mu.Unlock()
	if !scripted && len(cmd) > 1 && base(cmd[0]) == "cat" {
		res = catThroughMounts(mounts, cmd[1:])
	}

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

// catThroughMounts is the built-in "cat FILE...": each file is read on the
// host through the container's mounts (the longest ContainerPath that
// contains it), as busybox cat would read it inside the container; a
// symlink that leads out of its mount's host path is refused as missing.
// Messages are busybox's. The fake has no root filesystem: a path outside
// every mount prints nothing, the default of commands the fake does not
// know.
func catThroughMounts(mounts []*runtimeapi.Mount, files []string) ExecRule {
	var out, errs strings.Builder
	var code int32
	for _, f := range files {
		data, err := readThroughMounts(mounts, f)
		switch {
		case errors.Is(err, errNoMount):
			// Outside every mount: the fake has no root filesystem, and
			// keeps its default for it (no output). critest reads
			// /proc/self/status and /proc/1/cmdline this way.
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(&errs, "cat: can't open '%s': No such file or directory\n", f)
			code = 1
		case err != nil:
			fmt.Fprintf(&errs, "cat: read error: %s\n", errorText(err))
			code = 1
		default:
			out.Write(data)
		}
	}
	return ExecRule{Stdout: out.String(), Stderr: errs.String(), ExitCode: code}
}

// readThroughMounts reads a container path through the mounts.
func readThroughMounts(mounts []*runtimeapi.Mount, file string) ([]byte, error) {
	p := path.Clean("/" + file)
	var best *runtimeapi.Mount
	for _, m := range mounts {
		cp := path.Clean(m.GetContainerPath())
		if (p == cp || strings.HasPrefix(p, strings.TrimSuffix(cp, "/")+"/")) && (best == nil || len(cp) > len(path.Clean(best.GetContainerPath()))) {
			best = m
		}
	}
	if best == nil {
		return nil, errNoMount
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, path.Clean(best.GetContainerPath())), "/")
	host := filepath.Join(best.GetHostPath(), filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(host)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(best.GetHostPath())
	if err != nil {
		return nil, err
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return nil, fs.ErrNotExist
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("Is a directory")
	}
	return os.ReadFile(real)
}

// errNoMount says that a path is outside every mount of a container.
var errNoMount = errors.New("not under any mount")

// errorText is an error's message without Go's "op path: " prefix.
func errorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
