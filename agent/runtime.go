package agent

import (
	"context"
	"fmt"
	"iter"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/prober"
)

// Runtime is what every runtime the agent drives must implement: enough to
// run pods. The agent names the runtime (Version), runs each pod in a
// sandbox (SandboxManager), runs, stops, lists and inspects its containers
// and hands them resizes and log reopens (ContainerManager), and pulls,
// inspects, lists and removes images (ImageManager). Each method's
// contract is cri's; docs/providers.md says what a backend that is not
// CRI-shaped must do in each.
//
// Everything else is an optional capability, which the agent finds by
// asserting the runtime to its interface, as net/http finds an
// http.Flusher, and does without when it is missing:
//
//   - cri.Execer: exec probes, exec lifecycle hooks and the kubelet API's
//     /run. Without it an exec probe errors (its result stays unknown: the
//     container is never ready by it, never killed by it), an exec hook
//     fails, and /run answers that the runtime does not support it.
//   - cri.Streamer: the kubelet API's exec, attach and port-forward.
//     Without it they answer that the runtime does not support them.
//   - cri.StatsProvider and cri.ImageFSInfoer: the stats summary and the
//     eviction manager's pod usage and image filesystem. Without them the
//     summary has the node's usage but no pod's or container's, eviction
//     ranks no pod by usage, and an in-place resize cannot check a lowered
//     memory limit against usage.
//   - cri.EventSource: with Options.EventedPLEG, pod lifecycle events as
//     they happen. Without it the PLEG relists every RelistPeriod.
//   - cri.Checkpointer: the kubelet API's /checkpoint. Without it
//     /checkpoint answers that the runtime does not support it.
//   - cri.StatusReporter: the runtime's conditions and handler features.
//     Without it the runtime counts as ready with its network ready, and
//     no runtime handler as supporting recursive read-only mounts or user
//     namespaces or the Strict supplementalGroupsPolicy.
//
// A wrapper of a runtime (a metrics or logging decorator) hides every
// capability it does not implement itself; wrap a FullRuntime in a
// FullRuntime to keep them all. There is deliberately no base type to
// embed for the optional methods: a runtime that embedded one would assert
// to every capability and fail each call, where leaving a method out makes
// the agent degrade once, cleanly. Nor is one needed for forward
// compatibility: what CRI adds later comes as a new optional capability,
// never as a method of Runtime, so a provider keeps compiling.
type Runtime interface {
	cri.Versioner
	cri.SandboxManager
	cri.ContainerManager
	cri.ImageManager
}

// FullRuntime is a runtime with every capability: all of CRI v1's runtime
// and image services. The CRI client from cri.Dial and *fake.Runtime
// implement it.
type FullRuntime interface {
	cri.RuntimeService
	cri.ImageService
}

var (
	_ Runtime     = FullRuntime(nil)
	_ FullRuntime = (*cri.Client)(nil)
	_ FullRuntime = (*fake.Runtime)(nil)
)

// unsupported is the error of a call to an optional capability the runtime
// does not implement: it wraps cri.ErrUnimplemented, as a CRI runtime's
// Unimplemented answer does, so that every block degrades the same way for
// both.
func unsupported(op, capability string) error {
	return fmt.Errorf("%s: the container runtime does not support it (no %s): %w", op, capability, cri.ErrUnimplemented)
}

// capabilities is the agent's runtime seen as a FullRuntime by the blocks
// that take one (the pod syncer's hooks and resizes, the stats providers,
// the exec prober): each optional method is the runtime's when it
// implements the capability, else an error wrapping cri.ErrUnimplemented,
// which those blocks handle as upstream handles a runtime's Unimplemented.
// It stays inside the agent: Agent.Runtime returns the runtime as given, so
// that a caller's own assertions see only what the runtime implements.
type capabilities struct {
	Runtime
}

var _ FullRuntime = capabilities{}

// ExecSync implements cri.Execer.
func (c capabilities) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	if e, ok := c.Runtime.(cri.Execer); ok {
		return e.ExecSync(ctx, containerID, cmd, timeout)
	}
	return nil, unsupported("exec sync", "cri.Execer")
}

// Exec implements cri.Streamer.
func (c capabilities) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if s, ok := c.Runtime.(cri.Streamer); ok {
		return s.Exec(ctx, req)
	}
	return nil, unsupported("exec", "cri.Streamer")
}

// Attach implements cri.Streamer.
func (c capabilities) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if s, ok := c.Runtime.(cri.Streamer); ok {
		return s.Attach(ctx, req)
	}
	return nil, unsupported("attach", "cri.Streamer")
}

// PortForward implements cri.Streamer.
func (c capabilities) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if s, ok := c.Runtime.(cri.Streamer); ok {
		return s.PortForward(ctx, req)
	}
	return nil, unsupported("port forward", "cri.Streamer")
}

// ContainerStats implements cri.StatsProvider.
func (c capabilities) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	if s, ok := c.Runtime.(cri.StatsProvider); ok {
		return s.ContainerStats(ctx, containerID)
	}
	return nil, unsupported("container stats", "cri.StatsProvider")
}

// ListContainerStats implements cri.StatsProvider.
func (c capabilities) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	if s, ok := c.Runtime.(cri.StatsProvider); ok {
		return s.ListContainerStats(ctx, filter)
	}
	return nil, unsupported("list container stats", "cri.StatsProvider")
}

// PodSandboxStats implements cri.StatsProvider.
func (c capabilities) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	if s, ok := c.Runtime.(cri.StatsProvider); ok {
		return s.PodSandboxStats(ctx, podSandboxID)
	}
	return nil, unsupported("pod sandbox stats", "cri.StatsProvider")
}

// ListPodSandboxStats implements cri.StatsProvider.
func (c capabilities) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if s, ok := c.Runtime.(cri.StatsProvider); ok {
		return s.ListPodSandboxStats(ctx, filter)
	}
	return nil, unsupported("list pod sandbox stats", "cri.StatsProvider")
}

// ImageFsInfo implements cri.ImageFSInfoer.
func (c capabilities) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	if s, ok := c.Runtime.(cri.ImageFSInfoer); ok {
		return s.ImageFsInfo(ctx)
	}
	return nil, unsupported("image fs info", "cri.ImageFSInfoer")
}

// GetContainerEvents implements cri.EventSource: without one, a sequence
// that yields one error wrapping cri.ErrUnimplemented, as cri specifies.
func (c capabilities) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	if s, ok := c.Runtime.(cri.EventSource); ok {
		return s.GetContainerEvents(ctx)
	}
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		yield(nil, unsupported("get container events", "cri.EventSource"))
	}
}

// Status implements cri.StatusReporter: without one, the runtime and its
// network ready, and no handler or feature reported.
func (c capabilities) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	if s, ok := c.Runtime.(cri.StatusReporter); ok {
		return s.Status(ctx, verbose)
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

// UpdateRuntimeConfig implements cri.StatusReporter.
func (c capabilities) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	if s, ok := c.Runtime.(cri.StatusReporter); ok {
		return s.UpdateRuntimeConfig(ctx, config)
	}
	return unsupported("update runtime config", "cri.StatusReporter")
}

// RuntimeConfig implements cri.StatusReporter.
func (c capabilities) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	if s, ok := c.Runtime.(cri.StatusReporter); ok {
		return s.RuntimeConfig(ctx)
	}
	return nil, unsupported("runtime config", "cri.StatusReporter")
}

// withCapabilities is rt as a FullRuntime: rt itself when it is one, else
// rt with its missing capabilities answering ErrUnimplemented.
func withCapabilities(rt Runtime) FullRuntime {
	if f, ok := rt.(FullRuntime); ok {
		return f
	}
	return capabilities{rt}
}

// execer is rt's Execer, or nil (exec probes then fail with
// prober.ErrNoExecer) when it runs no commands.
func execer(rt Runtime) prober.Execer {
	if e, ok := rt.(cri.Execer); ok {
		return e
	}
	return nil
}

// CheckpointContainer implements cri.Checkpointer: the runtime's, when it
// has the capability (outside FullRuntime, as it is outside CRI's
// RuntimeService in this module), else ErrUnimplemented.
func (c capabilities) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	if cp, ok := c.Runtime.(cri.Checkpointer); ok {
		return cp.CheckpointContainer(ctx, req)
	}
	return unsupported("checkpoint", "cri.Checkpointer")
}

// UpdatePodSandboxResources implements cri.SandboxResourcesUpdater: the
// runtime's, when it has the capability, else ErrUnimplemented (which the
// resize takes as upstream takes a runtime's Unimplemented: it goes on).
func (c capabilities) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) error {
	if u, ok := c.Runtime.(cri.SandboxResourcesUpdater); ok {
		return u.UpdatePodSandboxResources(ctx, req)
	}
	return unsupported("update pod sandbox resources", "cri.SandboxResourcesUpdater")
}
