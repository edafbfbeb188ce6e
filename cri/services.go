package cri

import (
	"context"
	"iter"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pieces below split CRI v1 by concern. A consumer declares the piece (or a
// narrower interface of its own) that it needs; RuntimeService and ImageService
// compose them for implementations. Every method takes ctx first and honours its
// cancellation and deadline. An error that means "no such object" satisfies
// errors.Is(err, ErrNotFound); see errors.go for the full mapping.

// Versioner reports the runtime's name and version.
type Versioner interface {
	// Version returns the runtime name, version and the CRI API version it
	// serves. apiVersion is the CRI version the caller speaks (e.g. "v1").
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}

// SandboxManager manages pod sandboxes.
type SandboxManager interface {
	// RunPodSandbox creates and starts a sandbox and returns its ID.
	// runtimeHandler selects a runtime class ("" is the default).
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	// StopPodSandbox stops every container in the sandbox and the sandbox
	// itself. Stopping a stopped sandbox is not an error.
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	// RemovePodSandbox removes the sandbox and its containers. Removing a
	// sandbox that does not exist is not an error.
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	// PodSandboxStatus returns the status of one sandbox.
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	// ListPodSandbox lists the sandboxes that match filter (nil matches all).
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// ContainerManager manages containers inside sandboxes.
type ContainerManager interface {
	// CreateContainer creates a container in a sandbox and returns its ID.
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	// StartContainer starts a created container.
	StartContainer(ctx context.Context, containerID string) error
	// StopContainer sends SIGTERM (or the image's stop signal) and, after
	// timeout seconds, SIGKILL. Stopping an exited container is not an error.
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	// RemoveContainer removes a container, killing it first if it runs.
	// Removing a container that does not exist is not an error.
	RemoveContainer(ctx context.Context, containerID string) error
	// ListContainers lists the containers that match filter (nil matches all).
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	// ContainerStatus returns the status of one container.
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	// UpdateContainerResources changes a container's resources in place.
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
	// ReopenContainerLog asks the runtime to reopen the container's log file,
	// after log rotation.
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Execer runs a command in a running container and waits for it.
type Execer interface {
	// ExecSync runs cmd in the container and returns its output and exit
	// code. A non-zero exit code is not an error: it is in the response.
	// timeout 0 means no timeout beyond ctx.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
}

// Streamer prepares the runtime's streaming endpoints (exec, attach and
// port-forward over HTTP/SPDY or WebSocket). Each method returns the URL a
// client then connects to; the streams themselves are not part of CRI's gRPC.
type Streamer interface {
	// Exec prepares a streaming exec session.
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	// Attach prepares a streaming attach session.
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	// PortForward prepares a streaming port-forward session.
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// StatsProvider reports resource usage of containers and sandboxes.
type StatsProvider interface {
	// ContainerStats returns the usage of one container.
	ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error)
	// ListContainerStats returns the usage of the containers that match
	// filter (nil matches all).
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	// PodSandboxStats returns the usage of one sandbox.
	PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error)
	// ListPodSandboxStats returns the usage of the sandboxes that match filter
	// (nil matches all).
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
}

// EventSource streams container lifecycle events.
type EventSource interface {
	// GetContainerEvents follows the runtime's container events. The
	// sequence yields (event, nil) for each event and ends when ctx ends
	// (without an error), or when the stream fails, in which case the last
	// pair is (nil, err). A runtime without the events API yields one error
	// satisfying errors.Is(err, ErrUnimplemented). Breaking out of the loop
	// stops following.
	GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error]
}

// StatusReporter reports the runtime's own condition and configuration.
type StatusReporter interface {
	// Status returns the runtime's conditions (RuntimeReady, NetworkReady)
	// and, when verbose, runtime-specific info.
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	// UpdateRuntimeConfig hands the runtime configuration such as the pod CIDR.
	UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error
	// RuntimeConfig returns the runtime's configuration relevant to the
	// kubelet, such as the cgroup driver.
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// Checkpointer checkpoints running containers (CRI CheckpointContainer,
// upstream's ContainerCheckpoint feature). It is outside RuntimeService: a
// runtime may lack it (containerd 1.6 answers Unimplemented, 2.x needs
// CRIU), and the kubelet API then answers its /checkpoint requests with the
// runtime's error, as upstream's.
type Checkpointer interface {
	// CheckpointContainer writes a checkpoint archive of the running
	// container req.ContainerId at req.Location, a path on the node.
	// req.Timeout, in seconds, bounds the call when above zero.
	CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error
}

// SandboxResourcesUpdater tells the runtime a pod's new resources after an
// in-place resize (CRI UpdatePodSandboxResources, added in CRI v1 for 1.33;
// containerd 2.1 and later implement it, 1.6 answers Unimplemented). It is
// outside RuntimeService, as Checkpointer is: upstream's kubelet treats the
// call as a notification and goes on whatever the runtime answers.
type SandboxResourcesUpdater interface {
	// UpdatePodSandboxResources hands the runtime the pod's overhead and
	// its resources less the overhead, for the sandbox req.PodSandboxId.
	UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) error
}

// RuntimeService is the runtime half of CRI v1, as this module uses it.
// The CRI client returned by Dial and fake.Runtime implement it.
type RuntimeService interface {
	Versioner
	SandboxManager
	ContainerManager
	Execer
	Streamer
	StatsProvider
	EventSource
	StatusReporter
}

// ImageManager pulls, inspects and removes images.
type ImageManager interface {
	// ListImages lists the images that match filter (nil matches all).
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	// ImageStatus returns the image, or a response with a nil Image when the
	// image is not present (as CRI specifies; this is not an error).
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	// PullImage pulls an image and returns its reference (usually the
	// image ID or a digested reference).
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	// RemoveImage removes an image. Removing an absent image is not an error.
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// ImageFSInfoer reports the usage of the filesystems that hold images.
type ImageFSInfoer interface {
	// ImageFsInfo returns the usage of the image and container filesystems.
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// ImageService is the image half of CRI v1, as this module uses it.
type ImageService interface {
	ImageManager
	ImageFSInfoer
}
