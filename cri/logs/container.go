package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ErrNoLogs is what the errors of ContainerForLogs satisfy with errors.Is:
// the container named has no log to read (yet, or any more). Their messages
// are upstream's, which kubectl users read.
var ErrNoLogs = errors.New("no logs available")

// noLogsError keeps upstream's message and matches ErrNoLogs.
type noLogsError struct{ msg string }

func (e *noLogsError) Error() string        { return e.msg }
func (e *noLogsError) Is(target error) bool { return target == ErrNoLogs }

func noLogs(format string, args ...any) error {
	return &noLogsError{msg: fmt.Sprintf(format, args...)}
}

// Image pull failures that ContainerForLogs explains, as the kubelet's
// waiting reasons spell them.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// ContainerForLogs picks the runtime container whose log a request for
// container containerName of pod podName reads, from the pod's status, as
// the kubelet does: the running container, else the terminated one (or,
// when a restart has not started yet, the last terminated one); with
// previous, the last terminated one. It returns the runtime's container ID
// (the part after "<runtime>://"). A container that has not started is an
// error saying why, with upstream's messages ("container %q in pod %q is
// waiting to start: image can't be pulled", ...), matching ErrNoLogs.
func ContainerForLogs(podName string, status *v1.PodStatus, containerName string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	if status != nil {
		for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
			if cs = findStatus(list, containerName); cs != nil {
				break
			}
		}
	}
	if cs == nil {
		return "", noLogs("container %q in pod %q is not available", containerName, podName)
	}
	last := cs.LastTerminationState.Terminated
	state := cs.State
	var id string
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", noLogs("previous terminated container %q in pod %q not found", containerName, podName)
		}
		id = last.ContainerID
	case state.Running != nil:
		id = cs.ContainerID
	case state.Terminated != nil:
		id = state.Terminated.ContainerID
		if id == "" {
			// The next attempt did not start: the one before has logs.
			if last == nil || last.ContainerID == "" {
				return "", noLogs("container %q in pod %q is terminated", containerName, podName)
			}
			id = last.ContainerID
		}
	case last != nil:
		if last.ContainerID == "" {
			return "", noLogs("container %q in pod %q is terminated", containerName, podName)
		}
		id = last.ContainerID
	case state.Waiting != nil:
		switch reason := state.Waiting.Reason; reason {
		case reasonErrImagePull:
			return "", noLogs("container %q in pod %q is waiting to start: image can't be pulled", containerName, podName)
		case reasonImagePullBackOff:
			return "", noLogs("container %q in pod %q is waiting to start: trying and failing to pull image", containerName, podName)
		default:
			return "", noLogs("container %q in pod %q is waiting to start: %v", containerName, podName, reason)
		}
	default:
		return "", noLogs("container %q in pod %q is waiting to start - no logs yet", containerName, podName)
	}
	if _, after, ok := strings.Cut(id, "://"); ok {
		id = after
	}
	return id, nil
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// ReadContainerLogs reads the log of a runtime container: it asks rt for
// the container's log path and calls ReadLogs, as the kubelet's runtime
// manager does. A container the runtime cannot report is upstream's
// "unable to retrieve container logs for ..." (wrapping the runtime's
// error).
func ReadContainerLogs(ctx context.Context, rt ContainerStatuser, containerID string, opts *Options, stdout, stderr io.Writer) error {
	resp, err := rt.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("unable to retrieve container logs for %v: %w", containerID, err)
	}
	st := resp.GetStatus()
	if st == nil {
		return ErrContainerStatusNil
	}
	return ReadLogs(ctx, st.GetLogPath(), containerID, opts, rt, stdout, stderr)
}
