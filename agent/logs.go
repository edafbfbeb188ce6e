package agent

import (
	"context"
	"errors"
	"io"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/server"
)

// ContainerLogs implements server.ContainerLogger: the log of the
// container's current attempt, or of the one before with opts.Previous,
// read from the file the runtime writes (package cri/logs), and followed
// until the container ends with opts.Follow. A container with no log to
// read (not started yet, no previous attempt) is a bad request, with
// upstream's messages.
func (a *nodeAPI) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	if opts == nil {
		opts = &v1.PodLogOptions{}
	}
	st := pod.Status
	if s, ok := a.status.GetPodStatus(pod.UID); ok {
		st = s
	}
	id, err := logs.ContainerForLogs(pod.Name, &st, container, opts.Previous)
	if errors.Is(err, logs.ErrNoLogs) {
		return badRequest{err}
	}
	if err != nil {
		return err
	}
	return logs.ReadContainerLogs(ctx, a.rt, id, logs.NewOptions(opts, a.clock.Now()), stdout, stderr)
}

// badRequest makes the server answer an error 400 Bad Request, with the
// error's message.
type badRequest struct{ error }

func (e badRequest) Is(target error) bool { return target == server.ErrBadRequest }
func (e badRequest) Unwrap() error        { return e.error }
