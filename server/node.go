package server

import (
	"context"
	"io"
	"net/url"

	v1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// PodGetter finds one of the node's pods by namespace and name: the pods
// the node was given (API server pods, static pods under their mirror
// names), whether running or not.
type PodGetter interface {
	Pod(namespace, name string) (*v1.Pod, bool)
}

// ContainerLogger streams a container's log (/containerLogs).
type ContainerLogger interface {
	// ContainerLogs writes the log of the named container of pod to stdout
	// and stderr as opts asks (tail, since, timestamps, previous, limit),
	// and with opts.Follow keeps writing until the container ends or ctx
	// does. An error that wraps ErrNotFound is answered 404 and one that
	// wraps ErrBadRequest 400 when nothing was written yet; any other
	// error is answered 500.
	ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error
}

// StreamOptions are the streams a client asked for on exec and attach.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// Streamer gives the runtime's streaming URL for an exec, an attach or a
// port forward into one of the node's pods, as CRI's Exec, Attach and
// PortForward do. The server proxies the client's upgraded connection to
// that URL (or redirects to it).
//
// The server has found the pod (and checked the UID the path may give);
// the Streamer finds the running container. An error that wraps
// ErrNotFound or carries a gRPC NotFound status (no such container
// running) is answered 404, ErrBadRequest or InvalidArgument 400,
// ResourceExhausted 429, any other 500, with the error's text. Exec's cmd
// is the request's command parameters, as given; PortForward's ports are
// empty for a SPDY client, which names each port in its streams.
type Streamer interface {
	Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, opts StreamOptions) (*url.URL, error)
	Attach(ctx context.Context, pod *v1.Pod, container string, opts StreamOptions) (*url.URL, error)
	PortForward(ctx context.Context, pod *v1.Pod, ports []int32) (*url.URL, error)
}

// Checkpointer checkpoints a container of a pod (/checkpoint, upstream's
// ContainerCheckpoint feature): the runtime writes the running container's
// checkpoint archive on the node, and CheckpointContainer returns its
// path. timeoutSeconds above zero bounds the runtime's call. Its errors are
// answered 500 "checkpointing of NAMESPACE/POD/CONTAINER failed (ERROR)",
// as upstream's, whatever they are (a runtime without the call included).
type Checkpointer interface {
	CheckpointContainer(ctx context.Context, pod *v1.Pod, container string, timeoutSeconds int64) (string, error)
}

// CommandRunner runs a command in a container and returns its combined
// output (/run, CRI's ExecSync). Its errors are answered as Streamer's.
type CommandRunner interface {
	RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error)
}

// StatsProvider measures the node and its pods in the Summary API's types
// (/stats/summary). With onlyCPUAndMemory, only the CPU and memory of the
// node, the pods and their containers need be filled in
// (/stats/summary?only_cpu_and_memory=true, which metrics-server asks for).
// An error is answered 500 "Internal Error: <error>" (404 when it wraps
// ErrNotFound).
type StatsProvider interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error)
}

// RunningPodLister lists the pods the runtime runs, as the runtime knows
// them (/runningpods/): name, namespace, UID and containers, no status.
type RunningPodLister interface {
	RunningPods(ctx context.Context) ([]v1.Pod, error)
}
